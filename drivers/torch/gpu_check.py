#!/usr/bin/python3
"""A driver's GPU cells, run and compared (scripts/gpu-check runs this).

  gpu_check.py --driver EXE --model FILE.gguf --out DIR [--positions N]
               [--engine torch|llamacpp] [--hardware gpu|cpu]

--engine llamacpp: the llama.cpp driver on its CUDA build (scripts/setup-engines
--cuda): a float32-weights baseline with an f16 KV cache on the GPU, repeated, and one
cell per change (flash attention, a q8_0 and an f32 KV cache, a smaller ubatch, the
same coordinate on CPU). The rest of this text is about the torch driver (the default).

Runs the driver as a child process on teacher-forced jobs over the README text:
two float32 baselines (eager, f32 KV, TF32 off) and a bfloat16 one on cuda:0, then one
cell per change (TF32, deterministic algorithms, blocked attention, each sdpa backend,
float16, transformers' LlamaForCausalLM when transformers imports, and the same
coordinate on CPU), and compares every cell with its baseline: bit-identical rows, top-1
agreement, mean exact KL, max |dlogit|. A cell the driver refuses (invalid_combination:
this torch lacks the backend) is listed as refused. Writes OUT/report.md and
OUT/report.json; exit 0 when every cell ran or was refused with a typed error, 1
otherwise.
"""

import argparse
import array
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(HERE), "python")]

from orch_driver import digest, frames, records  # noqa: E402

BASE = {"engine": "torch@check", "quant": "f32", "kv": "f32", "attention": "off", "tp": "1",
        "hardware": "gpu", "threads": "0", "dtype": "float32", "matmul_tf32": "off",
        "deterministic": "off"}
BF16 = dict(BASE, dtype="bfloat16", kv="bf16")
LLAMA = {"engine": "llama.cpp@check", "quant": "f32", "kv": "f16", "attention": "off",
         "tp": "1", "hardware": "gpu", "threads": "0", "cpu_backend": "best"}


def llamacpp_cells():
    return [("llama.cpp: baseline repeat", LLAMA, dict(LLAMA)),
            ("llama.cpp: attention = on", LLAMA, dict(LLAMA, attention="on")),
            ("llama.cpp: kv = q8_0, attention = on", LLAMA,
             dict(LLAMA, attention="on", kv="q8_0")),
            ("llama.cpp: kv = f32", LLAMA, dict(LLAMA, kv="f32")),
            ("llama.cpp: ubatch = 32", LLAMA, dict(LLAMA, ubatch="32")),
            ("llama.cpp: hardware = cpu", LLAMA, dict(LLAMA, hardware="cpu"))]


def cells(transformers):
    out = [("float32 baseline repeat", BASE, dict(BASE)),
           ("matmul_tf32 = on", BASE, dict(BASE, matmul_tf32="on")),
           ("deterministic = on", BASE, dict(BASE, deterministic="on")),
           ("attention = blocked", BASE, dict(BASE, attention="blocked")),
           ("attention = sdpa", BASE, dict(BASE, attention="sdpa")),
           ("attention = sdpa_math", BASE, dict(BASE, attention="sdpa_math")),
           ("attention = sdpa_efficient", BASE, dict(BASE, attention="sdpa_efficient")),
           ("dtype = float16", BASE, dict(BASE, dtype="float16", kv="f16")),
           ("dtype = bfloat16", BASE, dict(BF16)),
           ("hardware = cpu", BASE, dict(BASE, hardware="cpu")),
           ("bf16: baseline repeat", BF16, dict(BF16)),
           ("bf16: attention = sdpa_flash", BF16, dict(BF16, attention="sdpa_flash")),
           ("bf16: attention = sdpa_cudnn", BF16, dict(BF16, attention="sdpa_cudnn")),
           ("bf16: attention = sdpa_efficient", BF16, dict(BF16, attention="sdpa_efficient"))]
    if transformers:
        out += [("impl = transformers (eager)", BASE, dict(BASE, impl="transformers")),
                ("impl = transformers (sdpa)", BASE, dict(BASE, impl="transformers",
                                                          attention="sdpa")),
                ("bf16: impl = transformers (flash_attention_2)", BF16,
                 dict(BF16, impl="transformers", attention="flash_attention_2"))]
    return out


def run(driver, model, text, positions, coordinate):
    job = {"run_id": "gpu-check", "job_id": "gpu-check", "coordinate": coordinate,
           "workload": {"name": "readme", "kind": "teacher_forced", "positions": positions,
                        "text": text},
           "capture": {"top_logits": 20, "full_every": 1, "full_windows": []},
           "model": {"requirement": "file", "path": model, "sha256": ""}}
    proc = subprocess.run([driver], input=json.dumps(job).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)
    result = {"exit": proc.returncode, "hello": None, "done": None, "error": None, "rows": [],
              "log": proc.stderr.decode(errors="replace")[-2000:]}
    for kind, payload in frames.split_frames(proc.stdout)[0]:
        if kind == frames.HELLO:
            result["hello"] = json.loads(payload)
        elif kind == frames.RECORD:
            fields, _, full = records.decode_position_record(payload)
            result["rows"].append((fields["hash_high"], fields["hash_low"], fields["argmax"], full))
        elif kind == frames.DONE:
            result["done"] = json.loads(payload)
        elif kind == frames.ERROR:
            result["error"] = json.loads(payload)
    return result


def compare(lib, a, b):
    n = min(len(a["rows"]), len(b["rows"]))
    same = sum(a["rows"][i][:2] == b["rows"][i][:2] for i in range(n))
    top1 = sum(a["rows"][i][2] == b["rows"][i][2] for i in range(n)) / max(n, 1)
    kls, worst = [], 0.0
    for i in range(n):
        p, q = a["rows"][i][3], b["rows"][i][3]
        kls.append(lib.kl_divergence(p, q))
        x, y = array.array("f", p), array.array("f", q)
        worst = max(worst, max(abs(u - v) for u, v in zip(x, y)))
    return {"positions": n, "bit_identical_rows": same, "top1_agreement": top1,
            "mean_kl": sum(kls) / max(len(kls), 1), "max_abs_dlogit": worst}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--positions", type=int, default=128)
    parser.add_argument("--hardware", default="gpu",
                        help="the baselines' hardware (cpu: a dry run of this script)")
    parser.add_argument("--engine", choices=("torch", "llamacpp"), default="torch")
    args = parser.parse_args()
    BASE["hardware"] = BF16["hardware"] = LLAMA["hardware"] = args.hardware
    LLAMA["engine"] = "llama.cpp@" + os.path.basename(args.driver).rpartition("-")[2]
    with open(os.path.join(os.path.dirname(HERE), "..", "examples", "texts", "readme.txt")) as f:
        text = f.read()
    try:
        import transformers  # noqa: F401
        have_transformers = True
    except ImportError:
        have_transformers = False
    lib = digest.load()
    baselines = {}
    report = {"model": args.model, "positions": args.positions, "cells": []}
    ok = True
    chosen = llamacpp_cells() if args.engine == "llamacpp" else cells(have_transformers)
    for name, base, coordinate in chosen:
        key = json.dumps(base, sort_keys=True)
        if key not in baselines:
            baselines[key] = run(args.driver, args.model, text, args.positions, base)
            if baselines[key]["done"] is None:
                sys.exit("gpu-check: the baseline %s failed: %s\n%s" % (
                    key, baselines[key]["error"], baselines[key]["log"]))
        cell = run(args.driver, args.model, text, args.positions, coordinate)
        entry = {"cell": name, "coordinate": coordinate}
        if cell["done"] is not None:
            entry.update(status="ran", ran=cell["done"].get("ran"),
                         kernel_path=cell["hello"]["kernel_path"],
                         **compare(lib, baselines[key], cell))
        elif cell["error"] is not None and cell["error"]["code"] == "invalid_combination":
            entry.update(status="refused", reason=cell["error"]["message"])
        else:
            ok = False
            entry.update(status="failed", error=cell["error"], log=cell["log"])
        report["cells"].append(entry)
        print("%-48s %s" % (name, entry["status"]), flush=True)
    first = next(iter(baselines.values()))
    report["hello"] = first["hello"]
    os.makedirs(args.out, exist_ok=True)
    stem = "report" if args.engine == "torch" else "report-" + args.engine
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    lines = ["# %s driver on the GPU" % args.engine, "",
             "hello: `%s`" % json.dumps(first["hello"]), "",
             "| cell | status | bit-identical rows | top-1 | mean KL | max abs dlogit | ran |",
             "|---|---|---|---|---|---|---|"]
    for e in report["cells"]:
        if e["status"] == "ran":
            lines.append("| %s | ran | %d/%d | %.4f | %.3g | %.3g | %s |" % (
                e["cell"], e["bit_identical_rows"], e["positions"], e["top1_agreement"],
                e["mean_kl"], e["max_abs_dlogit"], e["kernel_path"]))
        else:
            lines.append("| %s | %s | | | | | %s |" % (
                e["cell"], e["status"], (e.get("reason") or json.dumps(e.get("error")))[:160]))
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
