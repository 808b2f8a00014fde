"""The driver.Engine of every server family: the job's server object, the
server's self-report and the checks against it (before hello), then the
workload through the family's adapter, each row digested as a top-k row."""

from orch_driver import axes as axes_mod
from orch_driver import digest as digest_mod
from orch_driver import driver
from orch_driver.errors import InvalidCombination, InvalidJob
from orch_driver.job import Workload
from orch_server import common, http, labels, llama_server, load, ollama, rows, sglang, vllm

ADAPTERS = {"llama-server": llama_server, "vllm": vllm, "sglang": sglang, "ollama": ollama}

# How much of a launched server's log the driver reads for what the server chose.
_MAX_LOG_BYTES = 8 << 20


def _rules_that_apply(rules, canonical):
    """The rules whose two axes the coordinate has (as the planner does: a
    server's defaults are its own, not the driver's)."""
    return [r for r in rules if r.when.axis in canonical and r.needs.axis in canonical]


class ServerEngine(driver.Engine):
    def __init__(self, family):
        self.adapter = ADAPTERS[family]
        self.family = family
        self.driver_name = self.adapter.DRIVER
        self.axes = self.adapter.AXES
        self.rules = self.adapter.RULES
        self.server = None
        self.client = None
        self.report = None
        self.model = ""

    def hello(self, job):
        out = {"engine": self.family, "driver": self.driver_name,
               "build": {"driver": self.driver_name}}
        if self.report is None:
            return out
        r = self.report
        out.update({"version": r["version"], "commit": "",
                    "build": dict(r["build"], driver=self.driver_name),
                    "kernel_path": r["kernel_path"], "hardware": r.get("hardware") or "unreported (the server does not report its devices)",
                    "server": {"url": self.server.url, "mode": self.server.mode,
                               "jobs_before": self.server.jobs_before, "log": self.server.log,
                               "coordinate": self.server.coordinate, "model": self.model,
                               "reported": r["reported"]}})
        if job is not None:
            out["capture_path"] = self.adapter.CAPTURE_PATHS.get(job.workload.kind, "")
            out["load"] = load.planned(job)
        return out

    def _model_name(self, job):
        if self.server.model:
            return self.server.model
        spec = job.model.spec if isinstance(job.model.spec, dict) else {}
        name = spec.get("name")
        return name if isinstance(name, str) and name else job.model.requirement

    def check(self, job):
        # Session mode runs many jobs on this object: nothing of an earlier job's
        # server may reach this job's hello, even when this job fails its checks.
        self.server = self.client = self.report = None
        self.model = ""
        axes_mod.check_rules(_rules_that_apply(self.rules, job.canonical), job.canonical)
        label = job.engine or job.coordinate.get("engine", "")
        labels.label_version(label, self.family)
        kind = job.workload.kind
        if kind not in self.adapter.CAPTURE_PATHS:
            raise InvalidCombination(
                "%s returns no log-probabilities of prompt tokens, so it cannot run the "
                "teacher_forced workload %s; run generate workloads on it" % (
                    self.family, job.workload.name))
        if job.workload.messages or job.workload.continuation is not None:
            raise InvalidCombination(
                "workload %s: the %s driver does not yet run %s (the llama.cpp and torch "
                "drivers do); run this task workload's cells on those engines" % (
                    job.workload.name, self.family,
                    "chat messages" if job.workload.messages else "context + continuation"))
        if job.capture.full_every or job.capture.full_windows:
            raise InvalidCombination(
                "capture.full_every / full_windows: a %s server returns the top %d "
                "log-probabilities of a row, never the whole row; plan this cell without full "
                "rows" % (self.family, job.capture.top_logits))
        self.server = labels.parse_server(job.raw, self.family)
        self.client = http.Client(self.server.url, self.server.api_key)
        if self.family == "ollama":
            self.model = self._model_name(job)
            self.report = self.adapter.self_report(self.client, self.model)
        else:
            self.report = self.adapter.self_report(self.client)
            self.model = self.server.model or self.report["model"]
        labels.check_version(self.family, label, self.report["version"], self.server.url)
        self.adapter.check(job, self.report, self.server.url)
        self._check_log(job)

    def _check_log(self, job):
        """Requested vs effective from a launched server's log (vLLM's attention backend,
        which VLLM_ATTENTION_BACKEND no longer sets in recent releases): what the log says
        goes into the hello; a contradiction is invalid_combination naming both."""
        read = getattr(self.adapter, "effective_from_log", None)
        if read is None or not self.server.log:
            return
        try:
            with open(self.server.log, "rb") as f:
                text = f.read(_MAX_LOG_BYTES).decode("utf-8", "replace")
        except OSError as error:
            self.report["reported"]["from_log"] = "unreadable: %s" % error
            return
        effective = read(text)
        self.report["reported"]["from_log"] = effective
        for axis, same in self.adapter.LOG_CHECKS.items():
            common.check_axis(job, axis, effective.get(axis), self.server.url,
                              "its log %s: %s" % (self.server.log,
                                                  effective.get(axis + "_line", "")), same)

    def _tokens(self, job):
        w = job.workload
        if w.tokens is not None:
            tokens = w.tokens
        elif self.family == "llama-server":
            tokens = llama_server.tokenize(self.client, w.text)
        elif self.family == "vllm":
            tokens = vllm.tokenize(self.client, self.model, w.text)
        else:
            return None  # SGLang: the text is sent, the ids come back
        if w.positions and len(tokens) > w.positions:
            tokens = tokens[:w.positions]
        if not tokens:
            raise InvalidJob("workload: no tokens to evaluate")
        if w.positions and len(tokens) < w.positions:
            raise InvalidJob("workload: the text is %d tokens for this model, fewer than "
                             "positions = %d; use a longer text or fewer positions"
                             % (len(tokens), w.positions))
        return tokens

    def run(self, job, sink):
        library = digest_mod.load()

        def emit(produced):
            rows.emit_rows(sink, library, produced)

        def request(prompt, max_tokens):
            return self.adapter.background_request(prompt, max_tokens, job, self.model)

        busy = getattr(self.adapter, "busy", None)
        done, done_load = load.run_under_load(
            job, self.client, request, lambda: self._measured(job, emit),
            (lambda: busy(self.client)) if busy else None)
        done["load"] = done_load
        done["server"] = {"url": self.server.url, "mode": self.server.mode,
                          "jobs_before": self.server.jobs_before, "version": self.report["version"]}
        done["model"] = {"served": self.model, "path": job.model.path,
                         "sha256": job.model.sha256}
        return done

    def _measured(self, job, emit):
        k = job.capture.top_logits
        if job.workload.kind == Workload.TEACHER_FORCED:
            tokens = self._tokens(job)
            if self.family == "llama-server":
                done = llama_server.teacher_force(self.client, job, tokens, k, emit)
            else:
                done = self.adapter.teacher_force(self.client, job, tokens, k, emit, self.model)
        elif self.family == "llama-server":
            done = llama_server.generate(self.client, job, k, emit)
        else:
            done = self.adapter.generate(self.client, job, k, emit, self.model)
        return done


def main(family, argv=None):
    return driver.main(ServerEngine(family), argv)
