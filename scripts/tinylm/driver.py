"""Runs orch's llama.cpp driver (orch-driver-llamacpp-RELEASE) on a teacher-forced job
and decodes its frames (docs/driver-protocol.md) and position records (layouts v1 and v2,
digest/record_codec.h) with the driver SDK's readers (orch_driver.frames, .records).
"""
import struct
import json
import subprocess

from orch_driver import frames, records


class Record:
    """One position: input token, and the row digest's fields (logits are raw)."""

    def __init__(self, payload):
        fields, self.top, full = records.decode_position_record(payload)
        self.position = fields["position"]
        self.input_token = fields["input_token"]
        self.output_token = fields["output_token"]
        self.vocab_size = fields["vocab_size"]
        self.flags = fields["flags"]
        self.argmax = fields["argmax"]
        self.logsumexp = fields["logsumexp"]
        self.entropy = fields["entropy"]
        self.target_id = fields["target_id"]
        self.target_logit = fields["target_logit"]
        self.full_row = list(struct.unpack(f"<{len(full) // 4}f", full))


def teacher_forced_job(model_path, cache_dir, release, text=None, tokens=None,
                       positions=256, full_rows=False, quant="f32"):
    workload = {"name": "heldout", "kind": "teacher_forced", "positions": positions,
                "capture": {"top_logits": 20, "full_every": 1 if full_rows else 0,
                            "full_windows": [], "full_row_budget_bytes": 0}}
    if tokens is not None:
        workload["tokens"] = tokens
    else:
        workload["text"] = text
    coordinate = {"engine": f"llama.cpp@{release}", "quant": quant, "kv": "f32",
                  "attention": "off", "tp": "1", "hardware": "cpu", "threads": "1",
                  "cpu_backend": "best"}
    return {"run_id": "eval", "job_id": "eval", "experiment": "eval-tiny-model",
            "coordinate": coordinate, "workload": workload,
            "model": {"requirement": "file", "path": model_path, "cache_dir": cache_dir,
                      "spec": {}},
            "capture": workload["capture"],
            "requirements": {"engine": coordinate["engine"], "hardware": "cpu", "gpus": 0}}


def generate_job(model_path, cache_dir, release, prompt, max_tokens, quant="f32"):
    """A greedy generate job (temperature 0) with the teacher-forced job's coordinate."""
    job = teacher_forced_job(model_path, cache_dir, release, text=prompt, quant=quant)
    job["workload"] = {"name": "task", "kind": "generate", "prompt": prompt,
                       "max_tokens": max_tokens, "capture": job["capture"]}
    job["coordinate"].update({"sampler.seed": "42", "sampler.temperature": "0"})
    return job


def run(binary, job):
    """(hello, records, done); raises RuntimeError on an error frame or a failed run."""
    out = subprocess.run([binary], input=json.dumps(job).encode(), capture_output=True)
    hello, done, rows = None, None, []
    for kind, payload in frames.split_frames(out.stdout)[0]:
        if kind == frames.HELLO:
            hello = json.loads(payload)
        elif kind == frames.RECORD:
            rows.append(Record(payload))
        elif kind == frames.DONE:
            done = json.loads(payload)
        elif kind == frames.ERROR:
            raise RuntimeError(f"{binary}: {payload.decode()}")
    if out.returncode != 0 or done is None:
        raise RuntimeError(f"{binary}: exit {out.returncode}: {out.stderr.decode()[-2000:]}")
    return hello, rows, done
