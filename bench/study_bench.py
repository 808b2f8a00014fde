#!/usr/bin/python3
"""orch's own cost on a study-shaped experiment: `orch run` against a bare loop
that loads each model file once and runs the very job documents the agent
sent (docs/benchmarks.md, "A study on one machine").

  bench/study_bench.py [--sizes 100,300,1000] [--rounds N] [--seed-jobs N]
                       [--orch PATH] [--driver PATH] [--keep DIR] [--smoke]

For each model size (MB of f16 weights; vocabulary 32,000, 8 layers, the
width chosen to reach the size) it writes the synth model with `orch model
synth` and its q8_0 variant with `orch model quantize`, named in the spec as
its file and `variants.q8_0`, then:

- study: teacher forcing over 64 positions and generation of 16 tokens, 4
  seeds (the baseline's and 3 alternatives), a flash-attention cell and a
  q8_0 cell; one thread, one agent (`--agents 1`), so that orch and the bare
  loop use the same core.
- A recording run first (not timed): the driver is a wrapper that copies
  each process's stdin to a file, so the job documents the agent sent are
  kept. It also leaves the data dir warm (the agent's hash cache), as for
  the second experiment a user runs on a data dir.
- Per round, in turn: `orch run` of the study on that data dir under a new
  experiment name (spawn to exit), and the bare loop: one `DRIVER session`
  per model file and load coordinate, fed those job documents one after the
  other (spawn to exit, each model loaded once). Its wall time is the engine
  work the experiment needs; orch / bare is what orch costs on top (orch /
  eval: against the sum of the jobs' done.eval_ms alone). orch's wall time
  is split with the agent log's timestamps: start-up (command start to the
  first job), the gaps between one job's end and the next one's start, and
  the end (last job to exit).
- Per-job fixed cost: `orch run` of --seed-jobs generate jobs of one token
  (seeds only, one load coordinate) on the same data dir; the median gap
  between consecutive jobs (dispatch, reuse of the warm session, the model
  file's check, spool and store) is what a job costs beyond its engine work.

Prints, per size, the medians over the rounds and their spread (min-max).
The machine is usually shared: read ratios within a round, not absolute
times. A measurement, not a test: nothing is timed against a goal.
--smoke: one small size, one round, 3 seed jobs (the ctest study_bench_smoke,
so that the script keeps running).
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import driver_session_bench as frames  # noqa: E402  (framing helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ENGINE = "b8390"
# width (embd, heads, kv_heads, ff) per size in MB of f16 weights, vocabulary 32,000,
# 8 layers: embeddings and output 2 x 32,000 x embd, per layer about 11 x embd^2.
SHAPES = {
    100: (512, 8, 4, 1408),
    300: (1024, 16, 4, 2816),
    1000: (2048, 16, 4, 5632),
    20: (256, 4, 2, 768),
}
JOB_FRAME = 16

WRAPPER = """#!/bin/sh
# Records this process's stdin (the job documents the agent sends), then runs the driver.
exec /bin/sh -c 'd="$0"; driver="$1"; shift; tee "$d/in-$$" | exec "$driver" "$@"' "%s" "%s" "$@"
"""


def recipe(size):
    embd, heads, kv, ff = SHAPES[size]
    return ("llama:vocab=32000,embd=%d,layers=8,heads=%d,kv_heads=%d,ff=%d,ctx=1024,seed=1,"
            "type=f16" % (embd, heads, kv, ff))


def sha_of(out):
    return next(line.split()[1] for line in out.splitlines() if line.startswith("sha256"))


def make_models(orch, driver, size, folder):
    model = os.path.join(folder, "model-f16.gguf")
    out = subprocess.run([orch, "model", "synth", recipe(size), "-o", model], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    q8 = os.path.join(folder, "model-q8_0.gguf")
    subprocess.run([orch, "model", "quantize", model, q8, "q8_0", "--driver", driver],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    q8_sha = subprocess.run([orch, "model", "hash", q8, "--json"], check=True,
                            stdout=subprocess.PIPE, text=True).stdout
    return sha_of(out), json.loads(q8_sha)["sha256"], os.path.getsize(model)


def write_spec(folder, name, sha, q8_sha, shape):
    """shape "study": the study's cells and workloads; ("seeds", N): N generate jobs of
    one token, seeds only."""
    text = open(os.path.join(ROOT, "examples", "texts", "readme.txt"), encoding="utf-8").read()
    spec = ['[experiment]', 'name = "%s"' % name, '',
            '[model]', 'file = "model-f16.gguf"', 'sha256 = "%s"' % sha,
            'variants.q8_0 = { file = "model-q8_0.gguf", sha256 = "%s" }' % q8_sha, '']
    if shape == "study":
        spec += ['[[workloads]]', 'name = "tf-64"', 'kind = "teacher_forced"',
                 'text = %s' % json.dumps(text), 'positions = 64', '',
                 '[[workloads]]', 'name = "gen-16"', 'kind = "generate"',
                 'prompt = "The quick brown fox"', 'max_tokens = 16', '']
        alternatives = ['attention = ["on"]', 'quant = ["q8_0"]', 'sampler.seed = [2, 3, 4]']
    else:
        spec += ['[[workloads]]', 'name = "gen-1"', 'kind = "generate"',
                 'prompt = "The quick brown fox"', 'max_tokens = 1', '']
        alternatives = ['sampler.seed = [%s]' % ", ".join(str(s) for s in range(2, shape[1] + 1))]
    spec += ['[baseline]', 'engine = "llama.cpp@%s"' % ENGINE, 'quant = "f16"', 'kv = "f16"',
             'attention = "off"', 'tp = 1', 'hardware = "cpu"', 'threads = 1',
             'sampler.seed = 1', 'sampler.temperature = 0.8', '',
             '[alternatives]'] + alternatives + ['', '[repeats]', 'baseline = 1', 'cells = 1', '']
    path = os.path.join(folder, name + ".toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(spec))
    return path


def orch_run(orch, spec, data, driver):
    """Wall ms of `orch run` (spawn to exit), and the agent log's lines it added."""
    log = os.path.join(data, "local", "local-1.log")
    offset = os.path.getsize(log) if os.path.exists(log) else 0
    start_wall = datetime.datetime.now()
    start = time.monotonic()
    proc = subprocess.run([orch, "run", spec, "--agents", "1", "--data-dir", data,
                           "--driver", "llama.cpp@%s=%s" % (ENGINE, driver)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = (time.monotonic() - start) * 1000.0
    if proc.returncode != 0:
        raise RuntimeError("orch run %s exited %d:\n%s" % (spec, proc.returncode, proc.stdout))
    with open(log, encoding="utf-8") as f:
        f.seek(offset)
        lines = f.read().splitlines()
    return elapsed, phases(lines, start_wall, elapsed)


def phases(lines, start_wall, elapsed):
    """From the agent's log: ms from the command's start to the first job, the gaps
    between one job's end and the next one's start (dispatch, reuse or spawn, hashing,
    the spool and the store), and ms from the last job's end to the command's exit."""
    starts, ends = [], []
    for line in lines:
        stamp = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f")
        ms = (stamp - start_wall).total_seconds() * 1000.0
        if " on driver " in line and ": job " in line:
            starts.append(ms)
        elif ": succeeded, " in line:
            ends.append(ms)
    gaps = [b - a for a, b in zip(ends, starts[1:])]
    return {"startup": starts[0], "gaps": gaps, "teardown": elapsed - ends[-1]}


def recorded_jobs(folder):
    """The job documents of every recorded session, in order, from the frames."""
    jobs = []
    for name in sorted(os.listdir(folder), key=lambda n: os.path.getmtime(os.path.join(folder, n))):
        data = open(os.path.join(folder, name), "rb").read()
        at = 0
        while at + frames.HEADER.size <= len(data):
            length, kind = frames.HEADER.unpack_from(data, at)
            at += frames.HEADER.size
            if kind == JOB_FRAME:
                jobs.append(json.loads(data[at:at + length]))
            at += length
        if at == 0 and data.strip():  # a driver run alone: the job on stdin as JSON
            jobs.append(json.loads(data))
    return jobs


def load_key(job):
    """What a session is loaded with: the model file and the coordinate less its job-time
    axes (sampler, seed)."""
    axes = {k: v for k, v in job["coordinate"].items() if not k.startswith("sampler.")}
    return json.dumps([job["model"]["path"], axes], sort_keys=True)


def bare_loop(driver, jobs):
    """One session per load key, jobs in their order: (wall ms, sum of eval_ms)."""
    groups = {}
    for job in jobs:
        groups.setdefault(load_key(job), []).append(job)
    start = time.monotonic()
    eval_ms = 0.0
    for group in groups.values():
        results, _ = frames.run_session(driver, group)
        eval_ms += sum(done["eval_ms"] for _, _, done, _ in results)
    return (time.monotonic() - start) * 1000.0, eval_ms, len(groups)


def record(orch, spec, data, driver, folder):
    rec = os.path.join(folder, "recorded")
    shutil.rmtree(rec, ignore_errors=True)
    os.makedirs(rec)
    wrapper = os.path.join(folder, "recording-driver")
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write(WRAPPER % (rec, driver))
    os.chmod(wrapper, 0o755)
    orch_run(orch, spec, data, wrapper)
    return recorded_jobs(rec)


def spread(values, digits=2):
    return "%.*f (%.*f-%.*f)" % (digits, statistics.median(values), digits, min(values), digits,
                                 max(values))


def bench_size(args, size, folder):
    sha, q8_sha, nbytes = make_models(args.orch, args.driver, size, folder)
    data = os.path.join(folder, "data")
    jobs = record(args.orch, write_spec(folder, "study-rec", sha, q8_sha, "study"), data,
                  args.driver, folder)
    orch_ms, bare_ms, ratios, eval_ratios, startup, gaps, teardown, fixed = ([] for _ in range(8))
    for r in range(args.rounds):
        o, p = orch_run(args.orch, write_spec(folder, "study-%d" % r, sha, q8_sha, "study"), data,
                        args.driver)
        b, e, groups = bare_loop(args.driver, jobs)
        orch_ms.append(o)
        bare_ms.append(b)
        ratios.append(o / b)
        eval_ratios.append(o / e)
        startup.append(p["startup"])
        gaps.append(sum(p["gaps"]))
        teardown.append(p["teardown"])
        _, p = orch_run(args.orch, write_spec(folder, "seeds-%d" % r, sha, q8_sha,
                                              ("seeds", args.seed_jobs)), data, args.driver)
        fixed.append(statistics.median(p["gaps"]))
    print("| %d MB (%.0f MB) | %d jobs, %d loads | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        size, nbytes / 1e6, len(jobs), groups, spread(orch_ms, 0), spread(bare_ms, 0),
        spread(ratios), spread(eval_ratios), spread(startup, 0), spread(gaps, 0),
        spread(teardown, 0), spread(fixed, 0)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed-jobs", type=int, default=16)
    parser.add_argument("--orch", default=os.path.join(ROOT, "build", "cli", "orch"))
    parser.add_argument("--driver", default="")
    parser.add_argument("--keep", default="", help="work in DIR and keep it")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.rounds, args.seed_jobs = "20", 1, 3
    args.driver = os.path.realpath(args.driver or os.path.join(
        ROOT, "build", "drivers", "llamacpp", "orch-driver-llamacpp-" + ENGINE))
    print("| model (file) | study | orch run ms | bare loop ms | orch / bare | orch / eval"
          " | start-up ms | gaps ms | end ms | per-job gap ms (%d jobs) |" % args.seed_jobs)
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        folder = args.keep or tempfile.mkdtemp(prefix="orch-study-bench-")
        if args.keep:
            folder = os.path.join(args.keep, str(size))
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
        try:
            bench_size(args, size, folder)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
