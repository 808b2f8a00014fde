"""The job document on a driver's stdin (docs/driver-protocol.md, "The job"),
read and checked before any engine work. Mirrors the llama.cpp driver's
ParseJob (drivers/llamacpp/job_settings.cc): the same fields, defaults and
messages; every error names the field and the value.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from orch_driver import axes as axes_mod
from orch_driver import job_fields
from orch_driver.errors import InvalidJob


# Bytes of full rows a run may keep to make every position exact, when the job
# does not say (plan_document/job_fields.h, as the planner's default).
DEFAULT_FULL_ROW_BUDGET_BYTES = job_fields.limits("capture.full_row_budget_bytes")[2]
DEFAULT_TOP_LOGITS = job_fields.limits("capture.top_logits")[2]
BYTES_PER_LOGIT = 4


class Capture:
    """The capture policy: the top_logits largest logits of every row, and the whole row at
    every position when the run's rows fit `full_row_budget_bytes` (for_run;
    0 = never by budget), else at positions that are multiples of
    `full_every` (0 = never) or inside a [begin, end) window of
    `full_windows`."""

    def __init__(self, top_logits=DEFAULT_TOP_LOGITS, full_every=0, full_windows=(),
                 full_row_budget_bytes=DEFAULT_FULL_ROW_BUDGET_BYTES, every_row=False):
        self.top_logits = top_logits
        self.full_every = full_every
        self.full_windows = list(full_windows)
        self.full_row_budget_bytes = full_row_budget_bytes
        self.every_row = every_row

    def for_run(self, positions: int, vocab_size: int) -> Capture:
        """This policy for a run of `positions` rows of `vocab_size` logits:
        every row kept when positions x vocab_size x 4 bytes <= the budget
        (> 0); else full_every and full_windows alone decide."""
        fits = (self.full_row_budget_bytes > 0 and positions > 0 and vocab_size > 0 and
                positions * vocab_size * BYTES_PER_LOGIT <= self.full_row_budget_bytes)
        return Capture(self.top_logits, self.full_every, self.full_windows,
                       self.full_row_budget_bytes, fits)

    def wants_full_row(self, position: int) -> bool:
        if self.every_row:
            return True
        if self.full_every > 0 and position % self.full_every == 0:
            return True
        return any(begin <= position < end for begin, end in self.full_windows)


class Workload:
    TEACHER_FORCED = "teacher_forced"
    GENERATE = "generate"

    def __init__(self):
        self.kind = self.TEACHER_FORCED
        self.name = ""
        self.text = ""
        self.tokens = None  # list of ids when the workload gives tokens
        self.positions = 0
        self.context = None       # str, with continuation, for a context + continuation run
        self.continuation = None
        self.prompt = ""
        self.messages = None      # [(role, content)] when a generate workload gives messages
        self.max_tokens = 0

    def planned_positions(self) -> int:
        """The rows a run of this workload emits at most: positions under
        teacher forcing, max_tokens when generating."""
        return self.max_tokens if self.kind == self.GENERATE else self.positions


class ModelRef:
    def __init__(self):
        self.requirement = ""
        self.path = ""     # empty: the agent has no such model
        self.sha256 = ""   # of path, when the agent computed it
        self.cache_dir = ""
        self.spec = None


class Job:
    def __init__(self):
        self.run_id = ""
        self.job_id = ""
        self.engine = ""          # requirements.engine, e.g. "torch@1.13.1"
        self.coordinate = {}      # axis -> value text, as given
        self.settings = {}        # declared axis -> parsed value
        self.canonical = {}       # declared axis -> canonical text
        self.threads = 0          # resources.threads (0: not given)
        self.gpu_ids = []         # resources.gpu_ids: the job's GPUs (empty: not given)
        self.workload = Workload()
        self.capture = Capture()
        self.model = ModelRef()
        self.raw = {}             # the whole document


def _axis_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _short(value):
    return json.dumps(value)[:80]


def _integer_field(obj, where, key, fallback):
    value = obj.get(key)
    if value is None:
        return fallback
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidJob("%s.%s: expected a non-negative integer, got %s"
                         % (where, key, json.dumps(value)))
    return value


def _limited_field(obj, where, key):
    """A field of job_fields.INTEGER_FIELDS: absent, its default; else a
    non-negative integer within its limits."""
    low, high, default = job_fields.limits(where + "." + key)
    value = _integer_field(obj, where, key, default)
    if value < low or value > high:
        raise InvalidJob("%s.%s: expected %d to %d, got %d" % (where, key, low, high, value))
    return value


def _gpu_ids(resources):
    """resources.gpu_ids: a list of device numbers, or absent."""
    value = resources.get("gpu_ids")
    if value is None:
        return []
    if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value):
        raise InvalidJob("job.resources.gpu_ids: expected a list of device numbers "
                         "(non-negative integers), got %s" % _short(value))
    return list(value)


def _string_field(obj, key):
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def parse_capture(capture: Any) -> Capture:
    out = Capture()
    if not isinstance(capture, dict):
        return out
    if "top_k" in capture:
        raise InvalidJob("capture.top_k: renamed to capture.top_logits, got %s"
                         % _short(capture))
    out.top_logits = _limited_field(capture, "capture", "top_logits")
    out.full_every = _limited_field(capture, "capture", "full_every")
    out.full_row_budget_bytes = _limited_field(capture, "capture", "full_row_budget_bytes")
    windows = capture.get("full_windows")
    if windows is None:
        return out
    if not isinstance(windows, list):
        raise InvalidJob("capture.full_windows: expected [[begin, end], ...], "
                         "got %s" % json.dumps(windows))
    for window in windows:
        good = (isinstance(window, list) and len(window) == 2 and
                all(isinstance(v, int) and not isinstance(v, bool)
                    for v in window) and 0 <= window[0] <= window[1])
        if not good:
            raise InvalidJob("capture.full_windows: expected [begin, end] with "
                             "0 <= begin <= end, got %s" % json.dumps(window))
        out.full_windows.append((window[0], window[1]))
    return out


def _parse_tokens(tokens, out):
    if not isinstance(tokens, list):
        raise InvalidJob("workload.tokens: expected an array of token ids, "
                         "got %s" % _short(tokens))
    for token in tokens:
        if (isinstance(token, bool) or not isinstance(token, int) or
                token < 0 or token > 2**31 - 1):
            raise InvalidJob("workload.tokens: not a token id: %s"
                             % json.dumps(token))
    out.tokens = list(tokens)


ROLES = ("system", "user", "assistant")


def _parse_messages(name, messages):
    if not isinstance(messages, list) or not messages:
        raise InvalidJob('workload %s: messages: expected a non-empty array of {"role", '
                         '"content"}, got %s' % (name, _short(messages)))
    out = []
    for i, message in enumerate(messages):
        where = "workload %s: messages[%d]" % (name, i)
        if not isinstance(message, dict):
            raise InvalidJob("%s: expected an object, got %s" % (where, _short(message)))
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidJob('%s.role: expected "system", "user" or "assistant", got %s'
                             % (where, "nothing" if "role" not in message else _short(role)))
        content = message.get("content")
        if not isinstance(content, str):
            raise InvalidJob("%s.content: expected a string, got %s"
                             % (where, "nothing" if "content" not in message
                                else _short(content)))
        out.append((role, content))
    return out


def _parse_generate(workload, out):
    out.kind = Workload.GENERATE
    out.max_tokens = _integer_field(workload, "workload", "max_tokens", 0)
    if "messages" in workload:
        if workload.get("prompt") is not None:
            raise InvalidJob("workload %s: generate takes prompt or messages, not both"
                             % out.name)
        out.messages = _parse_messages(out.name, workload["messages"])
    else:
        out.prompt = _string_field(workload, "prompt")
    if (not out.prompt and not out.messages) or out.max_tokens == 0:
        raise InvalidJob("workload %s: generate needs a prompt (or messages) and "
                         "max_tokens > 0" % out.name)
    return out


def _parse_continuation(workload, out):
    if "text" in workload or "tokens" in workload:
        raise InvalidJob("workload %s: teacher_forced takes text, tokens, or context with "
                         "continuation, not several" % out.name)
    for key in ("context", "continuation"):
        if not isinstance(workload.get(key), str):
            raise InvalidJob("workload %s.%s: expected a string (context and continuation go "
                             "together), got %s" % (out.name, key, "nothing" if key not in
                                                    workload else _short(workload[key])))
    if not workload["continuation"]:
        raise InvalidJob("workload %s.continuation: expected a non-empty string" % out.name)
    out.context = workload["context"]
    out.continuation = workload["continuation"]
    return out


def parse_workload(workload: Any) -> Workload:
    """The workload object; other fields (the task object of a task workload's
    job, the plan's bookkeeping) are ignored."""
    if not isinstance(workload, dict):
        raise InvalidJob("workload: expected an object, got %s"
                         % _short(workload))
    out = Workload()
    out.name = _string_field(workload, "name")
    kind = _string_field(workload, "kind")
    if kind == Workload.TEACHER_FORCED:
        out.positions = _integer_field(workload, "workload", "positions", 0)
        if "context" in workload or "continuation" in workload:
            return _parse_continuation(workload, out)
        if "tokens" in workload:
            _parse_tokens(workload["tokens"], out)
            return out
        if not isinstance(workload.get("text"), str):
            raise InvalidJob("workload %s: teacher_forced needs text, tokens, or context "
                             "with continuation" % out.name)
        out.text = workload["text"]
        return out
    if kind == Workload.GENERATE:
        return _parse_generate(workload, out)
    raise InvalidJob('workload.kind: expected teacher_forced or generate, got '
                     '"%s"' % kind)


def _parse_model(model):
    if not isinstance(model, dict):
        raise InvalidJob("model: expected an object, got %s" % _short(model))
    out = ModelRef()
    out.requirement = _string_field(model, "requirement")
    out.path = _string_field(model, "path")
    out.sha256 = _string_field(model, "sha256")
    out.cache_dir = _string_field(model, "cache_dir")
    out.spec = model.get("spec")
    return out


def parse_job(text: bytes | str, axis_table: Sequence[axes_mod.Axis]) -> Job:
    """A Job from the document `text` (str or bytes). Coordinate axes found in
    `axis_table` (a list of axes.Axis) are checked and parsed into
    job.settings; others (free knob.* axes) are kept in job.coordinate only.
    InvalidJob on any malformed field."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict):
        raise InvalidJob("job: stdin is not a JSON object")
    job = Job()
    job.raw = doc
    job.run_id = _string_field(doc, "run_id")
    job.job_id = _string_field(doc, "job_id")
    if isinstance(doc.get("requirements"), dict):
        job.engine = _string_field(doc["requirements"], "engine")
    coordinate = doc.get("coordinate")
    if not isinstance(coordinate, dict):
        raise InvalidJob("job.coordinate: missing or not an object")
    by_name = {axis.name: axis for axis in axis_table}
    for name, value in coordinate.items():
        job.coordinate[name] = _axis_text(value)
        if name in by_name:
            canonical, parsed = axes_mod.read_value(by_name[name],
                                                    job.coordinate[name])
            job.canonical[name] = canonical
            job.settings[name] = parsed
    resources = doc.get("resources")
    if isinstance(resources, dict) and "threads" not in coordinate:
        _, most, default = job_fields.limits("resources.threads")
        job.threads = min(_integer_field(resources, "job.resources", "threads",
                                         default), most)
    if isinstance(resources, dict):
        job.gpu_ids = _gpu_ids(resources)
    job.workload = parse_workload(doc.get("workload"))
    capture = doc.get("capture")
    if capture is None and isinstance(doc.get("workload"), dict):
        capture = doc["workload"].get("capture")
    job.capture = parse_capture(capture)
    job.model = _parse_model(doc.get("model"))
    return job
