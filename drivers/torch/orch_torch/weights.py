"""A llama GGUF's hyperparameters and tensors as torch tensors.

f32, f16 and bf16 tensors are read as they are stored; q8_0 and q4_0 are
dequantized on load exactly as ggml does (value = quant * f16 scale, per
block of 32) and then cast to the compute dtype. Other types are refused.
"""

import warnings

import numpy as np
import torch

from orch_driver.errors import InvalidCombination, InvalidJob

DEQUANTIZED = ("q8_0", "q4_0")
SUPPORTED = ("f32", "f16", "bf16") + DEQUANTIZED


class LlamaConfig:
    def __init__(self, gguf):
        arch = gguf.get("general.architecture", "")
        if arch != "llama":
            raise InvalidCombination(
                'model %s: general.architecture "%s": the torch driver runs the '
                "llama architecture" % (gguf.path, arch))
        g = lambda key: gguf.require("llama." + key)
        self.embd = g("embedding_length")
        self.layers = g("block_count")
        self.ff = g("feed_forward_length")
        self.heads = g("attention.head_count")
        self.kv_heads = gguf.get("llama.attention.head_count_kv", self.heads)
        self.head_dim = self.embd // self.heads
        self.eps = g("attention.layer_norm_rms_epsilon")
        self.rope_base = gguf.get("llama.rope.freq_base", 10000.0)
        self.rope_dim = gguf.get("llama.rope.dimension_count", self.head_dim)
        self.ctx_train = g("context_length")
        tokens = gguf.get("tokenizer.ggml.tokens")
        embd = gguf.tensors.get("token_embd.weight")
        if embd is None:
            raise InvalidJob("model %s has no token_embd.weight" % gguf.path)
        self.vocab = embd.shape[1]
        if tokens is not None and len(tokens) != self.vocab:
            raise InvalidJob("model %s: %d tokens for an embedding of %d rows"
                             % (gguf.path, len(tokens), self.vocab))

    def describe(self):
        return ("vocab=%d embd=%d layers=%d heads=%d kv_heads=%d head_dim=%d ff=%d"
                % (self.vocab, self.embd, self.layers, self.heads, self.kv_heads,
                   self.head_dim, self.ff))


def _array(mapped, info, np_type, count):
    return np.frombuffer(mapped, dtype=np_type, count=count, offset=info.offset)


def tensor_f32_or_native(gguf, mapped, name):
    """The tensor `name` in torch, shape reversed from ggml's ne (so a matrix
    is [n_out, n_in], nn.Linear's layout), in its stored float type, or
    float32 for dequantized types."""
    info = gguf.tensors.get(name)
    if info is None:
        raise InvalidJob("model %s has no tensor %s" % (gguf.path, name))
    shape = list(reversed(info.shape))
    kind = info.type_name
    n = info.elements
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mmap is read-only; we copy
        if kind == "f32":
            return torch.from_numpy(_array(mapped, info, "<f4", n)).reshape(shape).clone()
        if kind == "f16":
            return torch.from_numpy(_array(mapped, info, "<f2", n)).reshape(shape).clone()
        if kind == "bf16":
            raw = torch.from_numpy(_array(mapped, info, "<i2", n)).clone()
            return raw.view(torch.bfloat16).reshape(shape)
        if kind == "q8_0":
            blocks = _array(mapped, info, np.dtype([("d", "<f2"), ("qs", "i1", 32)]), n // 32)
            d = torch.from_numpy(blocks["d"].astype(np.float32)).unsqueeze(1)
            q = torch.from_numpy(blocks["qs"].astype(np.float32))
            return (q * d).reshape(shape)
        if kind == "q4_0":
            blocks = _array(mapped, info, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), n // 32)
            d = torch.from_numpy(blocks["d"].astype(np.float32)).unsqueeze(1)
            qs = blocks["qs"].astype(np.int16)
            q = np.concatenate([(qs & 0x0F) - 8, (qs >> 4) - 8], axis=1)
            return (torch.from_numpy(q.astype(np.float32)) * d).reshape(shape)
    raise InvalidCombination(
        "model %s: tensor %s has type %s; the torch driver reads %s (q8_0/q4_0 "
        "dequantized on load)" % (gguf.path, name, kind, ", ".join(SUPPORTED)))


LAYER_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                 "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


class Weights:
    """Every tensor of the model: `layers[l][name]`, `embd`, `norm`, `output`
    (token_embd when the model ties it). `types` counts the stored types."""

    def __init__(self, gguf, mapped, config, dtype, devices):
        self.types = {}
        load = lambda name, device, cast=True: self._load(gguf, mapped, name, dtype,
                                                          device, cast)
        self.layer_devices = [devices[l * len(devices) // config.layers]
                              for l in range(config.layers)]
        self.embd = load("token_embd.weight", devices[0])
        self.layers = []
        for l in range(config.layers):
            device = self.layer_devices[l]
            self.layers.append({t: load("blk.%d.%s.weight" % (l, t), device,
                                        not t.endswith("_norm"))
                                for t in LAYER_TENSORS})
        last = devices[-1]
        self.norm = load("output_norm.weight", last, False)
        self.tied = "output.weight" not in gguf.tensors
        self.output = (self.embd.to(last) if self.tied
                       else load("output.weight", last))

    def _load(self, gguf, mapped, name, dtype, device, cast):
        info = gguf.tensors.get(name)
        if info is not None:
            self.types[info.type_name] = self.types.get(info.type_name, 0) + 1
        t = tensor_f32_or_native(gguf, mapped, name)
        # Norm weights stay float32: RMSNorm is computed in float32.
        return t.to(device=device, dtype=dtype if cast else torch.float32)

    def dequantized(self):
        return sorted(t for t in self.types if t in DEQUANTIZED)
