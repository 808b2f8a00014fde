"""The llama-architecture network, computed the way llama.cpp computes
general.architecture = "llama" (so the GGUF needs no permutation of Q/K):

  x = token_embd[tokens]
  per layer: h = x + attn_output(attention(rope(attn_q(n)), rope(attn_k(n)), attn_v(n)))
             with n = rmsnorm(x) * attn_norm;
             x = h + ffn_down(silu(ffn_gate(m)) * ffn_up(m)), m = rmsnorm(h) * ffn_norm
  logits = (rmsnorm(x) * output_norm) @ token_embd^T   (output tied to the embedding)

RoPE is ggml's "normal" mode (LLAMA_ROPE_TYPE_NORM): element pairs (2i, 2i+1) of each
head rotate by pos * freq_base^(-2i/head_dim). Query head h reads key/value head
h // (heads / kv_heads). Linear weights are [out, in] row-major, which is GGUF's
ne = [in, out].
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


class Config:
    def __init__(self, vocab, embd, layers, heads, kv_heads, ff, ctx,
                 rms_eps=1e-5, rope_base=10000.0):
        self.vocab, self.embd, self.layers, self.ff, self.ctx = vocab, embd, layers, ff, ctx
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = embd // heads
        self.rms_eps, self.rope_base = rms_eps, rope_base


class RmsNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, length):
    """cos and sin, [length, head_dim / 2]."""
    i = torch.arange(cfg.head_dim // 2, dtype=torch.float64)
    inv = cfg.rope_base ** (-2.0 * i / cfg.head_dim)
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().float(), angles.sin().float()


def rope(x, cos, sin):
    """x: [batch, time, heads, head_dim]; rotates pairs (2i, 2i+1)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        e, d = cfg.embd, cfg.head_dim
        self.cfg = cfg
        self.attn_norm = RmsNorm(e, cfg.rms_eps)
        self.attn_q = nn.Linear(e, cfg.heads * d, bias=False)
        self.attn_k = nn.Linear(e, cfg.kv_heads * d, bias=False)
        self.attn_v = nn.Linear(e, cfg.kv_heads * d, bias=False)
        self.attn_output = nn.Linear(cfg.heads * d, e, bias=False)
        self.ffn_norm = RmsNorm(e, cfg.rms_eps)
        self.ffn_gate = nn.Linear(e, cfg.ff, bias=False)
        self.ffn_up = nn.Linear(e, cfg.ff, bias=False)
        self.ffn_down = nn.Linear(cfg.ff, e, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg = self.cfg
        b, t, _ = x.shape
        n = self.attn_norm(x)
        q = rope(self.attn_q(n).view(b, t, cfg.heads, cfg.head_dim), cos, sin)
        k = rope(self.attn_k(n).view(b, t, cfg.kv_heads, cfg.head_dim), cos, sin)
        v = self.attn_v(n).view(b, t, cfg.kv_heads, cfg.head_dim)
        group = cfg.heads // cfg.kv_heads
        k = k.repeat_interleave(group, dim=2)
        v = v.repeat_interleave(group, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(cfg.head_dim))
        attn = torch.softmax(scores + mask, dim=-1) @ v
        h = x + self.attn_output(attn.transpose(1, 2).reshape(b, t, -1))
        m = self.ffn_norm(h)
        return h + self.ffn_down(F.silu(self.ffn_gate(m)) * self.ffn_up(m))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.token_embd = nn.Embedding(cfg.vocab, cfg.embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.output_norm = RmsNorm(cfg.embd, cfg.rms_eps)
        cos, sin = rope_tables(cfg, cfg.ctx)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def init_weights(self, generator):
        """Normal(0, 0.02) matrices; residual outputs scaled by 1/sqrt(2 * layers)."""
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02
                if name.endswith("attn_output.weight") or name.endswith("ffn_down.weight"):
                    std /= math.sqrt(2 * self.cfg.layers)
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=generator) * std)

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.token_embd(tokens)
        for block in self.blocks:
            x = block(x, self.cos[:t], self.sin[:t], mask)
        return self.output_norm(x) @ self.token_embd.weight.t()

    def gguf_tensors(self):
        """(GGUF name, tensor) in the order orch's synth writer uses."""
        out = [("token_embd.weight", self.token_embd.weight)]
        for i, b in enumerate(self.blocks):
            for part in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                         "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                out.append((f"blk.{i}.{part}.weight", getattr(b, part).weight))
        out.append(("output_norm.weight", self.output_norm.weight))
        return out
