"""orch-driver-torch's engine: job coordinate -> torch settings, checks of
what the running torch offers, and the run (teacher forcing or generation)
through the driver SDK (drivers/python/orch_driver)."""

import os
import sys
import time

import torch

from orch_driver import axes as axes_mod
from orch_driver import bpe, driver, gguf, model_file, pipeline
from orch_driver.errors import EngineError, InvalidCombination, InvalidJob
from orch_driver.job import Workload
from orch_torch import attention as attention_mod
from orch_torch import job_axes
from orch_torch.dtypes import DTYPE_CACHE_NAMES, DTYPES, torch_version
from orch_torch.sampler import Sampler, SamplerSettings
from orch_torch.session import LoadedModel, Session, job_devices

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def cuda_devices():
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


class TorchSettings:
    """The job's coordinate with the driver's defaults filled in."""

    def __init__(self, job):
        s = job.settings
        self.impl = s.get("impl", "orch")
        self.quant = s.get("quant", "")
        self.dtype = s.get("dtype", "float32")
        same = DTYPE_CACHE_NAMES[self.dtype]
        self.kv = s.get("kv", same + "/" + same).split("/")
        self.attention = s.get("attention", "auto")
        self.block = s.get("attention_block", 64)
        self.matmul_tf32 = s.get("matmul_tf32", False)
        self.deterministic = s.get("deterministic", False)
        self.threads = s.get("threads", job.threads)
        self.batch = s.get("batch", 0)
        self.ctx = s.get("ctx", 0)
        self.hardware = s.get("hardware", "cpu")
        self.tp = s.get("tp", 1)
        self.sampler = SamplerSettings()
        for key in ("temperature", "top_k", "top_p", "min_p", "repeat_penalty",
                    "repeat_last_n", "seed"):
            if "sampler." + key in s:
                setattr(self.sampler, key, s["sampler." + key])
        if "sampler.order" in s:
            self.sampler.order = s["sampler.order"].split(",")

    def gpu(self):
        return self.hardware.startswith("gpu")

    def rule_text(self):
        return {"tp": str(self.tp), "hardware": self.hardware,
                "matmul_tf32": "on" if self.matmul_tf32 else "off",
                "attention": self.attention, "impl": self.impl}

    def resolved_attention(self):
        if self.attention == "off":
            return "eager"
        if self.attention == "on":
            return "blocked"
        if self.attention == "auto":
            return "sdpa" if attention_mod.has_sdpa() else "eager"
        return self.attention


def _half_matmul_works(dtype):
    try:
        a = torch.ones((2, 2), dtype=dtype)
        torch.nn.functional.linear(a, a)
        return True
    except RuntimeError:
        return False


def check_runtime(settings):
    """What the running torch lacks, as invalid_combination."""
    here = "this is torch %s" % torch_version()
    attention = settings.resolved_attention()
    if attention.startswith("sdpa"):
        offered = attention_mod.available_sdpa_backends()
        if attention not in offered:
            need = ("torch >= 2.0 (torch.nn.functional.scaled_dot_product_attention)"
                    if not offered else "a torch whose torch.nn.attention.SDPBackend has it")
            raise InvalidCombination('attention = "%s" needs %s; %s (it offers: %s)' % (
                settings.attention, need, here,
                ", ".join(["off", "eager", "on", "blocked"] + offered)))
    if settings.impl == "transformers":
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise InvalidCombination(
                'impl = "transformers" needs the transformers package, which this '
                "Python (%s) cannot import; use impl = \"orch\"" % sys.executable)
    if settings.gpu():
        devices = cuda_devices()
        if not devices:
            raise InvalidCombination(
                'hardware = "%s": this torch sees no CUDA device (torch %s, CUDA %s); '
                'use hardware = "cpu"' % (settings.hardware, torch_version(),
                                         torch.version.cuda))
        if settings.tp > len(devices):
            raise InvalidCombination("tp = %d: this machine has %d CUDA devices"
                                     % (settings.tp, len(devices)))
    elif settings.dtype != "float32" and not _half_matmul_works(DTYPES[settings.dtype]):
        raise InvalidCombination('dtype = "%s" on CPU: torch %s has no CPU matmul for it; '
                                 'use bfloat16 or float32, or hardware = "gpu"'
                                 % (settings.dtype, torch_version()))


class TorchEngine(driver.Engine):
    family = "torch"
    driver_name = "orch-driver-torch"
    axes = job_axes.AXES
    rules = job_axes.RULES

    def hello(self, job):
        settings = TorchSettings(job) if job is not None else None
        devices = cuda_devices()
        hello = {
            "engine": "torch",
            "version": torch_version(),
            "commit": getattr(torch.version, "git_version", "") or "",
            "build": {
                "driver": "orch-driver-torch",
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "cuda": torch.version.cuda or "",
                "cudnn": (str(torch.backends.cudnn.version() or "")
                          if torch.backends.cudnn.is_available() else ""),
                "parallel": torch.__config__.parallel_info().splitlines()[-1].strip(),
                "sdpa_backends": attention_mod.available_sdpa_backends(),
            },
            "kernel_path": "unknown (no job)",
            "hardware": ["cpu: " + cpu_model()] + ["cuda:%d: %s" % (i, n)
                                                   for i, n in enumerate(devices)],
        }
        if settings is not None:
            hello["kernel_path"] = "%s: impl %s, attention %s, dtype %s" % (
                "cuda" if settings.gpu() else "cpu", settings.impl,
                settings.resolved_attention(), settings.dtype)
        return hello

    def check(self, job):
        settings = TorchSettings(job)
        axes_mod.check_rules(self.rules, settings.rule_text())
        check_runtime(settings)

    def digest_workers(self, job):
        """The cores torch's threads leave, at least 1 (orch_driver/pipeline.py);
        the engine's thread digests too while it waits for them."""
        cores = os.cpu_count() or 1
        return pipeline.workers_for(TorchSettings(job).threads or cores, cores)

    # Sessions (docs/drivers.md, "orch-driver-torch"): what LoadedModel
    # depends on. Everything else (kv, attention, threads, batch, ctx,
    # deterministic, matmul_tf32, sampler.*) is set per job on the loaded
    # weights.
    load_axes = ("impl", "quant", "dtype", "hardware", "tp")

    def load_key(self, job):
        settings = TorchSettings(job)
        key = (settings.impl, settings.quant, settings.dtype, settings.hardware, settings.tp,
               tuple(str(d) for d in job_devices(job, settings)))
        if settings.impl == "transformers":  # its attention is chosen when it is built
            key += (settings.resolved_attention(),)
        return key

    def load(self, job):
        return LoadedModel(job, TorchSettings(job))

    def run_loaded(self, job, handle, sink):
        return Session(job, TorchSettings(job)).run(sink, handle)

    def run(self, job, sink):
        return self.run_loaded(job, self.load(job), sink)
