"""What the engine actually ran (docs/drivers.md, "Effective settings"): the
done frame's `effective` object, read from the objects that ran rather than
echoed from the job.

  - attention: the attention function the model called (the orch impl: its
    `attend`, wrapped to record the path and the dtypes it was given; the
    transformers impl: the model config's attn_implementation);
  - dtype: the dtype the attention computed in (orch impl) or of the
    model's parameters (transformers impl);
  - kv: the dtypes of the KV cache tensors (the cache's storage; attention
    reads them converted to the compute dtype, recorded in raw);
  - threads: torch.get_num_threads().
Axis values are in the coordinate's vocabulary; an axis is left out when the
engine did not show what it did."""

import torch

CACHE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
# The coordinate's names for the paths it maps onto them (attention axis).
ALIASES = {"eager": ("off", "eager"), "blocked": ("on", "blocked")}


class AttentionObserver:
    """Wraps an attention function; remembers its path and the first call's
    q, k, v dtypes."""

    def __init__(self, attend, path):
        self.attend = attend
        self.path = path
        self.reads = None

    def __call__(self, q, k, v, start, groups):
        if self.reads is None:
            self.reads = (q.dtype, k.dtype, v.dtype)
        return self.attend(q, k, v, start, groups)


def observe(model, path):
    """Puts an observer around `model.attend` when the model has one."""
    if hasattr(model, "attend"):
        model.attend = AttentionObserver(model.attend, path)


def _name(names, dtype):
    return names.get(dtype, str(dtype).replace("torch.", ""))


def _attention_value(requested, path):
    """The path in the coordinate's words: the requested value when it names
    this path, else the path."""
    return requested if requested in ALIASES.get(path, (path,)) else path


def _cache_dtypes(cache):
    k, v = getattr(cache, "k", None), getattr(cache, "v", None)
    if not k or not v:
        return None
    return k[0].dtype, v[0].dtype


def effective(settings, model, cache):
    axes, raw = {}, {}
    observer = getattr(model, "attend", None)
    if isinstance(observer, AttentionObserver) and observer.reads is not None:
        axes["attention"] = _attention_value(settings.attention, observer.path)
        axes["dtype"] = _name(DTYPE_NAMES, observer.reads[0])
        raw["attention_path"] = observer.path
        raw["attention_reads"] = {"q": _name(CACHE_NAMES, observer.reads[0]),
                                  "k": _name(CACHE_NAMES, observer.reads[1]),
                                  "v": _name(CACHE_NAMES, observer.reads[2])}
    inner = getattr(model, "model", None)
    implementation = getattr(getattr(inner, "config", None), "_attn_implementation", None)
    if implementation is not None:
        raw["attn_implementation"] = implementation
        raw["attention_path"] = implementation
        parameter = next(inner.parameters(), None)
        if parameter is not None:
            axes["dtype"] = _name(DTYPE_NAMES, parameter.dtype)
    stored = _cache_dtypes(cache)
    if stored is not None:
        k, v = (_name(CACHE_NAMES, t) for t in stored)
        axes["kv"] = k if k == v else k + "/" + v
        raw["kv_cache"] = {"k": k, "v": v}
    axes["threads"] = str(torch.get_num_threads())
    raw["threads"] = torch.get_num_threads()
    return {"axes": axes, "why": {}, "raw": raw}
