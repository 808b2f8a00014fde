#!/usr/bin/python3
"""orch-driver-llama-server against a bare HTTP client loop on the same
llama-server, in one run (docs/benchmarks.md, "llama-server driver throughput").

  bench/llama_server_driver_bench.py [--positions N] [--rounds N] [--top-k K]
                                     [--server PATH] [--model FILE.gguf]
                                     [--driver PATH] [--smoke]

Starts llama-server (the one scripts/setup built) on 127.0.0.1 at a free
port with -np 1 -t 1, then per round, alternately:

- the driver as a child process on a teacher-forced job document of N
  positions, timed by its own done.wall_ms (the requests, the JSON parsing,
  a top-k digest, record and frame per position, written to a pipe);
- a bare loop in this process: the same N POST /completion requests (their
  bodies made by the adapter's own request_for from the same job document),
  on one persistent HTTP/1.1 connection (http.client), each answer read and
  parsed as JSON, nothing else.

Prints the median positions/s of both, their ratio (driver / bare; the goal
is >= 0.95), the median of the rounds' own ratios (each driver run against the
bare loop just before it: steadier on a busy machine), the driver's whole-
process wall time, and the CPU time per position of both (the driver's as
the CPU of the job less that of a one-position job: its start and
self-report taken out) and the driver's whole-process wall time. The server is stopped
by its pid. --smoke: 8 positions, one round, no goal (a check that the
benchmark still runs; nothing is timed against anything).
Needs ORCH_DIGEST_LIBRARY or a build tree with liborchdigest.
"""

import argparse
import http.client
import json
import os
import resource
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "drivers", "python"), os.path.join(ROOT, "drivers", "server")]

from orch_driver import job as job_mod  # noqa: E402
from orch_server import common, llama_server  # noqa: E402

SERVER = os.path.join(ROOT, "third_party", "engines", "llama.cpp-b8390", "server",
                      "llama-server")
MODEL = os.path.join(ROOT, "examples", "models", "kjv-tiny-f32.gguf")
DRIVER = os.path.join(ROOT, "drivers", "server", "orch-driver-llama-server")
LABEL = "llama-server@b8390"
HEALTH_TRIES = 240  # x 0.25 s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """llama-server on 127.0.0.1, started and stopped by its pid."""

    def __init__(self, program, model, ctx, log_dir):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = os.path.join(log_dir, "llama-server.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [program, "-m", model, "--host", "127.0.0.1", "--port", str(self.port),
             "-np", "1", "-t", "1", "-c", str(ctx)],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_healthy(self):
        for _ in range(HEALTH_TRIES):
            if self.proc.poll() is not None:
                sys.exit("llama-server exited with %d (log: %s)" % (self.proc.returncode,
                                                                    self.log_path))
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        sys.exit("llama-server did not answer /health in %d tries (log: %s)"
                 % (HEALTH_TRIES, self.log_path))

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def job_document(url, tokens, top_k):
    capture = {"top_logits": top_k, "full_every": 0, "full_windows": []}
    return {"run_id": "bench", "job_id": "0" * 32, "experiment": "bench",
            "coordinate": {"engine": LABEL, "slots": "1"},
            "workload": {"name": "bench", "kind": "teacher_forced", "positions": len(tokens),
                         "tokens": tokens, "capture": capture},
            "model": {"requirement": "kjv-tiny", "path": "", "sha256": "", "cache_dir": "",
                      "spec": {"name": "kjv-tiny"}},
            "capture": capture,
            "requirements": {"engine": LABEL, "hardware": "cpu", "gpus": 0},
            "server": {"url": url, "api_key_file": "", "mode": "attached", "jobs_before": 0}}


def request_bodies(document, tokens, top_k):
    """The driver's /completion bodies for this document, made by the adapter's
    request_for from the document's parsed settings (llama_server.teacher_force)."""
    job = job_mod.parse_job(json.dumps(document), llama_server.AXES)
    sampling = common.Sampling(job.settings)
    order = llama_server._order(job)
    return [llama_server.request_for(tokens[:j + 1], top_k, sampling, order)
            for j in range(len(tokens))]


def bare_loop_seconds(port, bodies):
    """The bodies encoded and POSTed in turn on one keep-alive connection, each
    answer parsed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for body in bodies:
            connection.request("POST", "/completion", json.dumps(body).encode("utf-8"),
                               headers)
            answer = connection.getresponse()
            raw = answer.read()
            if answer.status != 200:
                sys.exit("bare loop: HTTP %d: %s" % (answer.status, raw[:200]))
            doc = json.loads(raw)
            if not doc.get("completion_probabilities"):
                sys.exit("bare loop: no completion_probabilities in %s" % raw[:200])
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        connection.close()


def frames(stream):
    pos = 0
    while pos + 5 <= len(stream):
        length, kind = struct.unpack_from("<IB", stream, pos)
        yield kind, stream[pos + 5:pos + 5 + length]
        pos += 5 + length


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def driver_seconds(driver, document, env):
    """(done.wall_ms in seconds, process wall seconds, process CPU seconds,
    records written)."""
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run([driver], input=json.dumps(document).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, check=False)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        sys.exit("driver failed (%d): %s" % (proc.returncode, proc.stderr.decode()[-2000:]))
    kinds = list(frames(proc.stdout))
    done = json.loads(kinds[-1][1])
    return done["wall_ms"] / 1000.0, wall, cpu, sum(1 for kind, _ in kinds if kind == 2)


def digest_environment():
    env = dict(os.environ)
    if env.get("ORCH_DIGEST_LIBRARY"):
        return env
    for build in ("build", "build-release"):
        candidate = os.path.join(ROOT, build, "digest", "liborchdigest.so")
        if os.path.exists(candidate):
            env["ORCH_DIGEST_LIBRARY"] = candidate
            return env
    sys.exit("no digest library: set ORCH_DIGEST_LIBRARY or build orch_digest_c in build/")


def server_tokens(url, positions):
    """`positions` token ids of the model's vocabulary, from a text it knows."""
    text = ("In the beginning God created the heaven and the earth. And the earth was "
            "without form, and void; and darkness was upon the face of the deep. ")
    body = json.dumps({"content": text * (positions // 8 + 1), "add_special": True}).encode()
    request = urllib.request.Request(url + "/tokenize", data=body, method="POST",
                                      headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        tokens = json.loads(answer.read())["tokens"]
    if len(tokens) < positions:
        sys.exit("the text is %d tokens, fewer than %d positions" % (len(tokens), positions))
    return tokens[:positions]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--server", default=SERVER)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--driver", default=DRIVER)
    parser.add_argument("--smoke", action="store_true",
                        help="8 positions, one round: a check that the benchmark runs")
    args = parser.parse_args()
    if args.smoke:
        args.positions, args.rounds = 8, 1
    if not os.path.isfile(args.server):
        sys.exit("%s is missing: build it with scripts/setup" % args.server)
    env = digest_environment()
    with tempfile.TemporaryDirectory(prefix="orch-llama-server-bench-") as log_dir:
        server = Server(args.server, args.model, max(512, args.positions + 64), log_dir)
        try:
            server.wait_healthy()
            tokens = server_tokens(server.url, args.positions)
            document = job_document(server.url, tokens, args.top_k)
            bodies = request_bodies(document, tokens, args.top_k)
            one = job_document(server.url, tokens[:1], args.top_k)
            bare_loop_seconds(server.port, bodies[:8])  # warm-up
            bare, bare_cpu, driver, walls, cpus, fixed_cpus = [], [], [], [], [], []
            for _ in range(args.rounds):
                seconds, cpu = bare_loop_seconds(server.port, bodies)
                bare.append(seconds)
                bare_cpu.append(cpu)
                seconds, wall, cpu, records = driver_seconds(args.driver, document, env)
                if records != args.positions:
                    sys.exit("the driver wrote %d records for %d positions"
                             % (records, args.positions))
                driver.append(seconds)
                walls.append(wall)
                cpus.append(cpu)
                fixed_cpus.append(driver_seconds(args.driver, one, env)[2])
        finally:
            server.stop()
    n = args.positions
    bare_rate = n / statistics.median(bare)
    driver_rate = n / statistics.median(driver)
    print("server         %s, -np 1 -t 1, model %s" % (os.path.basename(args.server),
                                                      os.path.basename(args.model)))
    print("job            %d positions (one /completion each), top %d, %d round(s)"
          % (n, args.top_k, args.rounds))
    print("bare loop      %10.1f positions/s (keep-alive http.client, JSON parsed)" % bare_rate)
    print("driver         %10.1f positions/s (done.wall_ms: requests + parse + digest + "
          "records)" % driver_rate)
    print("ratio          %10.3f (of the medians: driver / bare; goal >= 0.95)"
          % (driver_rate / bare_rate))
    print("paired ratio   %10.3f (median of each round's driver / bare)"
          % statistics.median(b / d for b, d in zip(bare, driver)))
    print("rounds, pos/s  bare   %s" % " ".join("%6.1f" % (n / s) for s in bare))
    print("               driver %s" % " ".join("%6.1f" % (n / s) for s in driver))
    print("driver process %10.2f s median wall (python start, self-report, the job)"
          % statistics.median(walls))
    per_position = (statistics.median(cpus) - statistics.median(fixed_cpus)) / max(1, n - 1)
    print("CPU/position   bare %.0f us, driver %.0f us (driver: (CPU of the job - CPU of a "
          "1-position job) / %d)" % (1e6 * statistics.median(bare_cpu) / n,
                                     1e6 * per_position, max(1, n - 1)))


if __name__ == "__main__":
    main()
