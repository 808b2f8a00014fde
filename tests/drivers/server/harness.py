"""Runs a server driver executable on a job document and decodes its frames
(docs/driver-protocol.md). Environment (tests/drivers/server/CMakeLists.txt):
ORCH_SOURCE_DIR, ORCH_DIGEST_LIBRARY."""

import json
import os
import subprocess

from orch_driver import frames, records

SOURCE = os.environ.get("ORCH_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def driver(family):
    return os.path.join(SOURCE, "drivers", "server", "orch-driver-" + family)


class Output:
    def __init__(self, status, stdout, stderr):
        self.status = status
        self.log = stderr.decode("utf-8", errors="replace")
        self.frames = []
        self.hello = self.done = self.error = None
        self.records = []
        self.record_bytes = []  # the record payloads as written
        found, self.trailing = frames.split_frames(stdout)
        for kind, payload in found:
            self.frames.append(kind)
            if kind == frames.HELLO:
                self.hello = json.loads(payload)
            elif kind == frames.RECORD:
                self.records.append(records.decode_position_record(payload))
                self.record_bytes.append(payload)
            elif kind == frames.DONE:
                self.done = json.loads(payload)
            elif kind == frames.ERROR:
                self.error = json.loads(payload)


def run(family, job, timeout=120):
    proc = subprocess.run([driver(family)], input=json.dumps(job).encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return Output(proc.returncode, proc.stdout, proc.stderr)


def run_session(family, jobs, timeout=120):
    """`DRIVER session` with `jobs` as job frames, then end of file: (exit
    status, one Output per job stream, stderr)."""
    stdin = b"".join(frames.encode_job_frame(json.dumps(j)) for j in jobs)
    proc = subprocess.run([driver(family), "session"], input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    streams, _ = frames.split_job_streams(proc.stdout)
    outputs = [Output(proc.returncode, stream, b"") for stream in streams]
    return proc.returncode, outputs, proc.stderr.decode("utf-8", errors="replace")


def job(label, url, coordinate=None, workload=None, top_k=3, server=None):
    workload = workload or {"name": "w", "kind": "teacher_forced", "positions": 4,
                            "tokens": [11, 22, 33, 44]}
    capture = {"top_logits": top_k, "full_every": 0, "full_windows": []}
    workload = dict(workload, capture=capture)
    server_object = {"url": url, "api_key_file": "", "mode": "attached", "jobs_before": 0}
    server_object.update(server or {})
    return {"run_id": "run-1", "job_id": "0" * 32, "experiment": "servers",
            "coordinate": dict({"engine": label}, **(coordinate or {})),
            "workload": workload,
            "model": {"requirement": "kjv-tiny", "path": "", "sha256": "", "cache_dir": "",
                      "spec": {"name": "kjv-tiny"}},
            "capture": capture,
            "requirements": {"engine": label, "hardware": "cpu", "gpus": 0},
            "server": server_object}
