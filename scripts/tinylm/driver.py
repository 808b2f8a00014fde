"""Runs orch's llama.cpp driver (orch-driver-llamacpp-RELEASE) on a teacher-forced job
and decodes its frames (docs/driver-protocol.md) and position records (layouts v1 and v2,
digest/record_codec.h).
"""
import json
import struct
import subprocess

FRAME_HELLO, FRAME_RECORD, FRAME_DONE, FRAME_ERROR = 1, 2, 3, 4


class Record:
    """One position: input token, and the row digest's fields (logits are raw)."""

    def __init__(self, payload):
        (version, self.position, self.input_token, self.output_token, self.vocab_size,
         self.flags, self.argmax, self.logsumexp, self.entropy, _low, _high,
         self.target_id, self.target_logit, count) = struct.unpack_from(
             "<BQiiIIiddQQifI", payload, 0)
        if version not in (1, 2):  # the same layout (digest/record_codec.h)
            raise ValueError(f"record version {version}")
        offset = struct.calcsize("<BQiiIIiddQQifI")
        self.top = [struct.unpack_from("<if", payload, offset + 8 * i) for i in range(count)]
        offset += 8 * count
        (rows,) = struct.unpack_from("<I", payload, offset)
        self.full_row = list(struct.unpack_from(f"<{rows}f", payload, offset + 4))


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
    data, i = out.stdout, 0
    hello, done, records = None, None, []
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        kind, payload = data[i + 4], data[i + 5:i + 5 + n]
        i += 5 + n
        if kind == FRAME_HELLO:
            hello = json.loads(payload)
        elif kind == FRAME_RECORD:
            records.append(Record(payload))
        elif kind == FRAME_DONE:
            done = json.loads(payload)
        elif kind == FRAME_ERROR:
            raise RuntimeError(f"{binary}: {payload.decode()}")
    if out.returncode != 0 or done is None:
        raise RuntimeError(f"{binary}: exit {out.returncode}: {out.stderr.decode()[-2000:]}")
    return hello, records, done
