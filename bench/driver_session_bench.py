#!/usr/bin/python3
"""The per-job fixed cost of an engine driver: N short jobs run as N driver
processes (cold, as before sessions) against one driver session (warm,
docs/driver-protocol.md "Sessions"), in one run (docs/benchmarks.md,
"Driver sessions").

  bench/driver_session_bench.py [--engine llamacpp|torch] [--jobs N]
                                [--positions N] [--recipe RECIPE]
                                [--driver PATH] [--orch PATH] [--smoke]

Generates the synth model RECIPE (default 349 MB of f32 weights, vocabulary
32,000) with `orch model synth` into a temporary folder (removed at exit),
then runs the same teacher-forced job of --positions positions (one
thread, the model's sha256 given as the agent gives it):

- cold: N times `DRIVER` as a child process, the job on stdin; the job's
  time is spawn to exit;
- warm: one `DRIVER session`, the N jobs as job frames one after the other;
  a job's time is from writing its frame to reading its done frame.

A job's fixed cost is its time less the engine's own evaluation (done's
eval_ms: the decode and digests of the positions). Prints the median fixed
cost of the cold jobs, of the session's first job (which loads the model)
and of its warm jobs, the session's fixed cost per job with its start and
end amortized over the N jobs, the ratios cold / warm, and both as a share
of the evaluation. Also checks that every warm job's records are the cold
job's, byte for byte. A measurement, not a test: nothing is timed against
a goal. --smoke: a 1k-vocabulary model, 3 jobs, 4 positions (a ctest, so
that the script keeps running).
"""

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
DEFAULT_RECIPE = "llama:vocab=32000,embd=768,layers=6,heads=12,kv_heads=4,ff=2048,ctx=1024,seed=1"
SMOKE_RECIPE = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1"
JOB_FRAME = 16
DONE, ERROR, RECORD = 3, 4, 2
HEADER = struct.Struct("<IB")


def default_driver(engine):
    if engine == "torch":
        return os.path.join(ROOT, "drivers", "torch", "orch-driver-torch")
    return os.path.join(ROOT, "build", "drivers", "llamacpp", "orch-driver-llamacpp-b8390")


def synth(orch, recipe, folder):
    path = os.path.join(folder, "model.gguf")
    out = subprocess.run([orch, "model", "synth", recipe, "-o", path], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    sha = next(line.split()[1] for line in out.splitlines() if line.startswith("sha256"))
    return path, sha, os.path.getsize(path)


def job_document(engine, model, sha, positions, index):
    label = "torch@x" if engine == "torch" else "llama.cpp@b8390"
    coordinate = {"engine": label, "quant": "f32", "kv": "f16", "attention": "off", "tp": "1",
                  "hardware": "cpu", "threads": "1"}
    if engine != "torch":
        coordinate["cpu_backend"] = "best"
    with open(os.path.join(ROOT, "examples", "texts", "readme.txt"), encoding="utf-8") as f:
        text = f.read()
    capture = {"top_logits": 20, "full_every": 0, "full_windows": []}
    return {"run_id": "bench-%d" % index, "job_id": "%032x" % index, "experiment": "bench",
            "coordinate": coordinate,
            "workload": {"name": "readme", "kind": "teacher_forced", "positions": positions,
                         "text": text, "capture": capture},
            "model": {"requirement": "sha256:" + sha, "path": model, "sha256": sha,
                      "cache_dir": "", "spec": {}},
            "capture": capture,
            "requirements": {"engine": label, "hardware": "cpu", "gpus": 0}}


def read_exactly(stream, size):
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise RuntimeError("the driver's stdout ended inside a frame")
        data += chunk
    return data


def read_job(stream):
    """(hello, records, done) of one job stream; fails on an error frame."""
    hello, records = None, []
    while True:
        length, kind = HEADER.unpack(read_exactly(stream, HEADER.size))
        payload = read_exactly(stream, length)
        if kind == 1:
            hello = json.loads(payload)
        elif kind == RECORD:
            records.append(payload)
        elif kind == ERROR:
            raise RuntimeError("driver error: %s" % payload.decode())
        elif kind == DONE:
            return hello, records, json.loads(payload)


def run_cold(driver, job):
    start = time.monotonic()
    proc = subprocess.Popen([driver], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    proc.stdin.write(json.dumps(job).encode())
    proc.stdin.close()
    _, records, done = read_job(proc.stdout)
    status = proc.wait()
    elapsed = (time.monotonic() - start) * 1000.0
    if status != 0:
        raise RuntimeError("%s exited %d" % (driver, status))
    return elapsed, records, done


def run_session(driver, jobs):
    """Per job (ms from frame written to done read, records, done, hello), and
    the session's whole wall time (spawn to exit)."""
    start = time.monotonic()
    proc = subprocess.Popen([driver, "session"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    results = []
    for job in jobs:
        payload = json.dumps(job).encode()
        begin = time.monotonic()
        proc.stdin.write(HEADER.pack(len(payload), JOB_FRAME) + payload)
        proc.stdin.flush()
        hello, records, done = read_job(proc.stdout)
        results.append(((time.monotonic() - begin) * 1000.0, records, done, hello))
    proc.stdin.close()
    status = proc.wait()
    if status != 0:
        raise RuntimeError("%s session exited %d" % (driver, status))
    return results, (time.monotonic() - start) * 1000.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("llamacpp", "torch"), default="llamacpp")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--positions", type=int, default=16)
    parser.add_argument("--recipe", default=DEFAULT_RECIPE)
    parser.add_argument("--driver", default="")
    parser.add_argument("--orch", default=os.path.join(ROOT, "build", "cli", "orch"))
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.jobs, args.positions, args.recipe = 3, 4, SMOKE_RECIPE
    driver = args.driver or default_driver(args.engine)
    folder = tempfile.mkdtemp(prefix="orch-session-bench-")
    try:
        model, sha, size = synth(args.orch, args.recipe, folder)
        jobs = [job_document(args.engine, model, sha, args.positions, i)
                for i in range(args.jobs)]
        cold = [run_cold(driver, job) for job in jobs]
        warm, session_ms = run_session(driver, jobs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    for i, ((_, cold_records, cold_done), (_, warm_records, warm_done, hello)) in enumerate(
            zip(cold, warm)):
        if warm_records != cold_records or not cold_records:
            raise RuntimeError("job %d: the session's records differ from the cold run's" % i)
        if hello["session"] != {"warm": i > 0, "jobs_before": i}:
            raise RuntimeError("job %d: hello.session = %s" % (i, hello["session"]))

    cold_fixed = [ms - done["eval_ms"] for ms, _, done in cold]
    warm_fixed = [ms - done["eval_ms"] for ms, _, done, _ in warm]
    eval_ms = statistics.median(done["eval_ms"] for _, _, done in cold)
    amortized = (session_ms - sum(done["eval_ms"] for _, _, done, _ in warm)) / len(warm)
    steady = statistics.median(warm_fixed[1:]) if len(warm_fixed) > 1 else float("nan")
    cold_median = statistics.median(cold_fixed)
    print("driver   %s" % driver)
    print("model    %s (%.0f MB), %d jobs of %d positions, 1 thread"
          % (args.recipe, size / 1e6, args.jobs, args.positions))
    print("records  every warm job's records equal the cold job's, byte for byte")
    print("eval     %.1f ms per job (median done.eval_ms)" % eval_ms)
    print("fixed cost per job (time less eval_ms):")
    print("  cold process          %8.1f ms  (median; %.0f%% of eval)"
          % (cold_median, 100.0 * cold_median / eval_ms))
    print("  session, first job    %8.1f ms  (loads the model)" % warm_fixed[0])
    print("  session, warm job     %8.1f ms  (median; %.1f%% of eval)"
          % (steady, 100.0 * steady / eval_ms))
    print("  session, amortized    %8.1f ms  (spawn to exit, less eval, / %d jobs)"
          % (amortized, args.jobs))
    print("ratio cold / warm       %8.1fx  (amortized: %.1fx)"
          % (cold_median / steady, cold_median / amortized))
    return 0


if __name__ == "__main__":
    sys.exit(main())
