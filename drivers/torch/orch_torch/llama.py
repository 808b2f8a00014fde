"""The llama forward in PyTorch, written from the GGUF layout:

  x = token_embd[ids]
  per layer: h = x + Wo attn(rope(Wq n), rope(Wk n), Wv n), n = rmsnorm(x)
             x = h + Wdown(silu(Wgate m) * Wup m),            m = rmsnorm(h)
  logits = Woutput rmsnorm(x)

RMSNorm is computed in float32 and cast back (as transformers does); RoPE
rotates adjacent pairs (x[2i], x[2i+1]), llama.cpp's LLAMA_ROPE_TYPE_NORM,
which is what GGUF's permuted Q/K weights expect. Attention is one of
ATTENTION (attention.py); the KV cache holds K and V rounded to the kv
storage dtype. Prefill runs in chunks of `batch` tokens.
"""

import torch
import torch.nn.functional as F

from orch_torch import attention as attention_mod


class KvCache:
    def __init__(self, config, capacity, dtypes, layer_devices):
        self.k = []
        self.v = []
        for device in layer_devices:
            shape = (capacity, config.kv_heads, config.head_dim)
            self.k.append(torch.zeros(shape, dtype=dtypes[0], device=device))
            self.v.append(torch.zeros(shape, dtype=dtypes[1], device=device))
        self.length = 0
        self.capacity = capacity


class LlamaModel:
    def __init__(self, config, weights, dtype, attention, block):
        self.config = config
        self.w = weights
        self.dtype = dtype
        self.attend = attention_mod.make(attention, block)
        half = config.rope_dim // 2
        exponent = torch.arange(0, half, dtype=torch.float64) * 2.0 / config.rope_dim
        self.inv_freq = (config.rope_base ** -exponent).to(torch.float32)

    def _rms_norm(self, x, weight):
        xf = x.float()
        variance = xf.pow(2).mean(-1, keepdim=True)
        return (xf * torch.rsqrt(variance + self.config.eps) * weight).to(self.dtype)

    def _rope(self, x, positions):
        # x: [T, H, D]; rotates the first rope_dim dims in adjacent pairs.
        dim = self.config.rope_dim
        angle = positions.float().unsqueeze(1) * self.inv_freq.to(x.device).unsqueeze(0)
        cos = angle.cos().unsqueeze(1)
        sin = angle.sin().unsqueeze(1)
        rot = x[..., :dim].float().reshape(x.shape[0], x.shape[1], dim // 2, 2)
        even, odd = rot[..., 0], rot[..., 1]
        out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        out = out.reshape(x.shape[0], x.shape[1], dim).to(x.dtype)
        if dim == x.shape[-1]:
            return out
        return torch.cat((out, x[..., dim:]), dim=-1)

    def _layer(self, l, x, positions, cache, start):
        c = self.config
        w = self.w.layers[l]
        t = x.shape[0]
        n = self._rms_norm(x, w["attn_norm"])
        q = F.linear(n, w["attn_q"]).view(t, c.heads, c.head_dim)
        k = F.linear(n, w["attn_k"]).view(t, c.kv_heads, c.head_dim)
        v = F.linear(n, w["attn_v"]).view(t, c.kv_heads, c.head_dim)
        q = self._rope(q, positions)
        k = self._rope(k, positions)
        cache.k[l][start:start + t] = k.to(cache.k[l].dtype)
        cache.v[l][start:start + t] = v.to(cache.v[l].dtype)
        keys = cache.k[l][:start + t].to(self.dtype)
        values = cache.v[l][:start + t].to(self.dtype)
        a = self.attend(q, keys, values, start, c.heads // c.kv_heads)
        h = x + F.linear(a.reshape(t, c.embd), w["attn_output"])
        m = self._rms_norm(h, w["ffn_norm"])
        ff = F.silu(F.linear(m, w["ffn_gate"])) * F.linear(m, w["ffn_up"])
        return h + F.linear(ff, w["ffn_down"])

    @torch.no_grad()
    def forward(self, tokens, cache, all_logits=True):
        """Feeds `tokens` (a list) after cache.length cached positions;
        returns float32 logits [len(tokens) or 1, vocab] on the last device."""
        start = cache.length
        device = self.w.layer_devices[0] if self.w.layer_devices else self.w.norm.device
        ids = torch.tensor(tokens, dtype=torch.long, device=self.w.embd.device)
        x = self.w.embd[ids].to(self.dtype)
        positions = torch.arange(start, start + len(tokens), device=device)
        for l in range(self.config.layers):
            layer_device = self.w.layer_devices[l]
            if x.device != layer_device:
                x = x.to(layer_device)
                positions = positions.to(layer_device)
            x = self._layer(l, x, positions, cache, start)
        cache.length = start + len(tokens)
        if not all_logits:
            x = x[-1:]
        x = x.to(self.w.norm.device)
        return F.linear(self._rms_norm(x, self.w.norm), self.w.output).float()
