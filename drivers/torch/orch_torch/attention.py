"""Attention implementations of the torch driver's own forward. Each takes
q [T, H, D] (positions start..start+T-1), keys and values [S, KVH, D]
(positions 0..S-1, S = start + T), the grouped-query factor, and returns
[T, H, D] with causal masking and scale 1/sqrt(D).

  eager    softmax(QK^T * scale) V; scores in the compute dtype, softmax in
           float32 then cast back (transformers' eager attention)
  blocked  online softmax over blocks of `block` keys, running max and sum
           and the output accumulated in float32 (the flash-attention
           algorithm, written out)
  sdpa*    torch.nn.functional.scaled_dot_product_attention (torch >= 2.0),
           optionally pinned to one backend with torch.nn.attention.sdpa_kernel
"""

import contextlib
import math

import torch
import torch.nn.functional as F

SDPA_BACKENDS = {"sdpa_math": "MATH", "sdpa_flash": "FLASH_ATTENTION",
                 "sdpa_efficient": "EFFICIENT_ATTENTION",
                 "sdpa_cudnn": "CUDNN_ATTENTION"}


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def available_sdpa_backends():
    """The sdpa backend values this torch can be pinned to."""
    if not has_sdpa():
        return []
    try:
        from torch.nn.attention import SDPBackend
    except ImportError:
        return ["sdpa"]
    return ["sdpa"] + [v for v, name in SDPA_BACKENDS.items() if hasattr(SDPBackend, name)]


def _expand(x, groups):
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def _causal_mask(t, s, start, device):
    rows = torch.arange(start, start + t, device=device).unsqueeze(1)
    cols = torch.arange(s, device=device).unsqueeze(0)
    return cols <= rows  # True = may attend


def eager(q, k, v, start, groups):
    t, s = q.shape[0], k.shape[0]
    k = _expand(k, groups).transpose(0, 1)  # [H, S, D]
    v = _expand(v, groups).transpose(0, 1)
    scores = torch.matmul(q.transpose(0, 1), k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = _causal_mask(t, s, start, q.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(probs, v).transpose(0, 1)


def make_blocked(block):
    def blocked(q, k, v, start, groups):
        t, s = q.shape[0], k.shape[0]
        scale = 1.0 / math.sqrt(q.shape[-1])
        qh = q.transpose(0, 1)  # [H, T, D]
        k = _expand(k, groups).transpose(0, 1)
        v = _expand(v, groups).transpose(0, 1)
        heads = qh.shape[0]
        running_max = torch.full((heads, t, 1), float("-inf"), device=q.device)
        running_sum = torch.zeros((heads, t, 1), device=q.device)
        acc = torch.zeros((heads, t, q.shape[-1]), device=q.device)
        rows = torch.arange(start, start + t, device=q.device).unsqueeze(1)
        for begin in range(0, min(s, start + t), block):
            end = min(begin + block, s)
            scores = torch.matmul(qh, k[:, begin:end].transpose(1, 2)).float() * scale
            cols = torch.arange(begin, end, device=q.device).unsqueeze(0)
            scores = scores.masked_fill(~(cols <= rows), float("-inf"))
            new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
            safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
            p = torch.exp(scores - safe)
            correction = torch.exp(running_max - safe)
            running_sum = running_sum * correction + p.sum(dim=-1, keepdim=True)
            acc = acc * correction + torch.matmul(p.to(v.dtype), v[:, begin:end]).float()
            running_max = new_max
        return (acc / running_sum).to(q.dtype).transpose(0, 1)
    return blocked


def _backend_context(name):
    if name == "sdpa":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(getattr(SDPBackend, SDPA_BACKENDS[name]))


def make_sdpa(name):
    def sdpa(q, k, v, start, groups):
        t, s = q.shape[0], k.shape[0]
        qh = q.transpose(0, 1).unsqueeze(0)
        kh = _expand(k, groups).transpose(0, 1).unsqueeze(0)
        vh = _expand(v, groups).transpose(0, 1).unsqueeze(0)
        with _backend_context(name):
            if start == 0:
                out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
            else:
                mask = _causal_mask(t, s, start, q.device)
                out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
        return out.squeeze(0).transpose(0, 1)
    return sdpa


def make(name, block):
    """The attention function for the canonical value `name` (resolved:
    "off" -> eager, "on" -> blocked, "auto" -> sdpa or eager)."""
    if name == "eager":
        return eager
    if name == "blocked":
        return make_blocked(block)
    return make_sdpa(name)
