"""Runs real engine drivers (orch-driver-torch, orch-driver-llamacpp-REL) on
job documents and decodes their frames, for the torch driver's tests.

Environment (set by tests/drivers/torch/CMakeLists.txt): ORCH_TORCH_DRIVER,
ORCH_LLAMACPP_DRIVER_DIR (holding orch-driver-llamacpp-REL), ORCH_BINARY
(`orch`, for synth models), ORCH_SOURCE_DIR, ORCH_DIGEST_LIBRARY."""

import json
import os
import subprocess

from orch_driver import digest, frames, records

SOURCE = os.environ.get("ORCH_SOURCE_DIR", "")
README = os.path.join(SOURCE, "examples", "texts", "readme.txt")


class Output:
    def __init__(self, status, stdout, stderr):
        self.status = status
        self.log = stderr.decode("utf-8", errors="replace")
        self.hello = None
        self.done = None
        self.error = None
        self.records = []
        self.record_bytes = []  # the record payloads as written
        found, self.trailing = frames.split_frames(stdout)
        for kind, payload in found:
            if kind == frames.HELLO:
                self.hello = json.loads(payload)
            elif kind == frames.RECORD:
                self.records.append(records.decode_position_record(payload))
                self.record_bytes.append(payload)
            elif kind == frames.DONE:
                self.done = json.loads(payload)
            elif kind == frames.ERROR:
                self.error = json.loads(payload)

    @property
    def hashes(self):
        return [(f["hash_high"], f["hash_low"]) for f, _, _ in self.records]

    @property
    def argmax(self):
        return [f["argmax"] for f, _, _ in self.records]

    @property
    def inputs(self):
        return [f["input_token"] for f, _, _ in self.records]

    @property
    def full_rows(self):
        return [full for _, _, full in self.records]


def run(executable, job, env=None):
    proc = subprocess.run([executable], input=json.dumps(job).encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, timeout=240)
    return Output(proc.returncode, proc.stdout, proc.stderr)


class SessionOutput:
    def __init__(self, status, stdout, stderr):
        self.status = status
        self.log = stderr.decode("utf-8", errors="replace")
        streams, self.rest = frames.split_job_streams(stdout)
        self.jobs = [Output(status, stream, b"") for stream in streams]


def run_session(executable, jobs, env=None):
    """`executable session` with `jobs` as job frames on stdin, then end of
    file."""
    stdin = b"".join(frames.encode_job_frame(json.dumps(job)) for job in jobs)
    proc = subprocess.run([executable, "session"], input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=240)
    return SessionOutput(proc.returncode, proc.stdout, proc.stderr)


_ENGINE = None


def run_in_process(job):
    """The torch driver's run_job in this process (torch imported once): the same
    engine code as the executable without the process start, for the many runs
    whose subject is not the process."""
    global _ENGINE
    import io
    from orch_driver import driver
    if _ENGINE is None:
        from orch_torch.engine import TorchEngine
        _ENGINE = TorchEngine()
    out = io.BytesIO()
    status = driver.run_job(_ENGINE, json.dumps(job).encode(), frames.FrameWriter(out))
    return Output(status, out.getvalue(), b"")


def torch_driver():
    return os.environ["ORCH_TORCH_DRIVER"]


def llama_driver(release):
    return os.path.join(os.environ["ORCH_LLAMACPP_DRIVER_DIR"],
                        "orch-driver-llamacpp-" + release)


def synth(recipe, path):
    if not os.path.exists(path):
        subprocess.run([os.environ["ORCH_BINARY"], "model", "synth", recipe, "-o", path],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def readme_text():
    with open(README, encoding="utf-8") as f:
        return f.read()


def teacher_forced(model_path, coordinate, positions=64, text=None, capture=None,
                   requirement="synth:test"):
    return {
        "run_id": "r", "job_id": "j",
        "coordinate": dict(coordinate),
        "workload": {"name": "readme", "kind": "teacher_forced", "positions": positions,
                     "text": readme_text() if text is None else text},
        "capture": capture or {"top_logits": 20, "full_every": 0, "full_windows": [],
                               "full_row_budget_bytes": 0},
        "model": {"requirement": requirement, "path": model_path, "sha256": "",
                  "cache_dir": ""},
        "requirements": {"engine": coordinate.get("engine", ""), "hardware": "cpu",
                         "gpus": 0},
    }


def top1_agreement(a, b):
    return sum(x == y for x, y in zip(a.argmax, b.argmax)) / max(1, len(a.argmax))


def mean_kl(a, b):
    """Mean exact KL(P_a || P_b) over positions with full rows in both."""
    lib = digest.load()
    values = [lib.kl_divergence(p, q) for p, q in zip(a.full_rows, b.full_rows) if p and q]
    return sum(values) / len(values)


def max_abs_delta(a, b):
    import array
    worst = 0.0
    for p, q in zip(a.full_rows, b.full_rows):
        x, y = array.array("f", p), array.array("f", q)
        worst = max(worst, max(abs(u - v) for u, v in zip(x, y)))
    return worst
