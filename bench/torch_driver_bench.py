#!/usr/bin/python3
"""orch-driver-torch against a bare PyTorch forward of the same model, in one
run (docs/benchmarks.md, "The torch driver").

  bench/torch_driver_bench.py --model FILE.gguf [--positions N] [--reps N]
                              [--threads N] [--driver PATH]

Per round, alternately: the bare forward (the model loaded once in this
process: one forward over N positions, logits copied to host float32, no
digest) and the driver as a child process on a teacher-forced job over the
same N token ids, timed by its own done.eval_ms (forward + digest + records +
frames written to a pipe). Prints the median positions/s of both, their ratio
(driver / bare; the goal is >= 0.9) and the driver's whole-process wall time.
Needs ORCH_DIGEST_LIBRARY or a build tree with liborchdigest.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "drivers", "python"), os.path.join(ROOT, "drivers", "torch")]

import torch  # noqa: E402

from orch_driver import gguf  # noqa: E402
from orch_torch import weights as weights_mod  # noqa: E402
from orch_torch.llama import KvCache, LlamaModel  # noqa: E402


def bare_forward_seconds(model, config, tokens):
    cache = KvCache(config, len(tokens), (torch.float16, torch.float16), model.w.layer_devices)
    start = time.perf_counter()
    logits = model.forward(tokens, cache).to("cpu").contiguous()
    elapsed = time.perf_counter() - start
    assert logits.shape == (len(tokens), config.vocab)
    return elapsed


def driver_run(driver, model_path, tokens, threads):
    job = {"run_id": "bench", "job_id": "bench",
           "coordinate": {"engine": "torch@bench", "kv": "f16", "attention": "off",
                          "dtype": "float32", "threads": str(threads), "hardware": "cpu"},
           "workload": {"name": "bench", "kind": "teacher_forced", "positions": len(tokens),
                        "tokens": tokens},
           "capture": {"top_logits": 20, "full_every": 0, "full_windows": [],
                       "full_row_budget_bytes": 0},
           "model": {"requirement": "file", "path": model_path, "sha256": "bench"}}
    start = time.perf_counter()
    proc = subprocess.run([driver], input=json.dumps(job).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("driver failed (%d): %s" % (proc.returncode, proc.stderr.decode()[-2000:]))
    done = last_frame_json(proc.stdout)
    return done["eval_ms"] / 1000.0, wall


def last_frame_json(stream):
    pos = 0
    last = None
    while pos + 5 <= len(stream):
        length = int.from_bytes(stream[pos:pos + 4], "little")
        last = stream[pos + 5:pos + 5 + length]
        pos += 5 + length
    return json.loads(last)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--positions", type=int, default=512)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--driver", default=os.path.join(ROOT, "drivers", "torch",
                                                         "orch-driver-torch"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    file, mapped = gguf.open_gguf(args.model)
    config = weights_mod.LlamaConfig(file)
    w = weights_mod.Weights(file, mapped, config, torch.float32, [torch.device("cpu")])
    model = LlamaModel(config, w, torch.float32, "eager", 64)
    tokens = [(i * 7919 + 3) % config.vocab for i in range(args.positions)]
    bare_forward_seconds(model, config, tokens)  # warm-up
    bare, driver, walls = [], [], []
    for _ in range(args.reps):
        bare.append(bare_forward_seconds(model, config, tokens))
        seconds, wall = driver_run(args.driver, args.model, tokens, args.threads)
        driver.append(seconds)
        walls.append(wall)
    n = args.positions
    bare_rate = n / statistics.median(bare)
    driver_rate = n / statistics.median(driver)
    print("model          %s (%s)" % (os.path.basename(args.model), config.describe()))
    print("torch          %s, %d thread(s), %d positions, %d rounds"
          % (torch.__version__, args.threads, n, args.reps))
    print("bare forward   %10.1f positions/s" % bare_rate)
    print("driver         %10.1f positions/s (eval: forward + digest + records)" % driver_rate)
    print("ratio          %10.3f (driver / bare; goal >= 0.9)" % (driver_rate / bare_rate))
    print("driver process %10.2f s median wall (python start, import torch, load, eval)"
          % statistics.median(walls))


if __name__ == "__main__":
    main()
