"""The coordinate's sampler chain for generate workloads, with llama.cpp's
semantics (drivers/llamacpp/llama_session.cc BuildSampler): the samplers of
`order` (penalties, top_k, top_p, min_p, temperature), then the seeded draw;
at temperature 0, greedy (the lowest id among the largest logits) after
penalties. The draw uses a torch.Generator seeded with sampler.seed: seeded
draws are this driver's own, not llama.cpp's mt19937 stream, so sampled
generations compare across engines only in distribution; greedy ones compare
token for token.
"""

import math

import torch


class SamplerSettings:
    def __init__(self):
        self.temperature = 0.8
        self.top_k = 40
        self.top_p = 0.95
        self.min_p = 0.05
        self.repeat_penalty = 1.0
        self.repeat_last_n = 64
        self.seed = 0
        self.order = ["penalties", "top_k", "top_p", "min_p", "temperature"]

    def greedy(self):
        return self.temperature <= 0.0


class Sampler:
    def __init__(self, settings, context_size):
        self.s = settings
        self.history = []  # tokens accepted (generated), as llama.cpp's chain sees them
        self.window = context_size if settings.repeat_last_n < 0 else settings.repeat_last_n
        self.generator = torch.Generator().manual_seed(settings.seed)

    def _penalize(self, logits):
        if self.s.repeat_penalty == 1.0 or self.window == 0 or not self.history:
            return logits
        seen = torch.tensor(sorted(set(self.history[-self.window:])), dtype=torch.long)
        values = logits[seen]
        logits[seen] = torch.where(values <= 0, values * self.s.repeat_penalty,
                                   values / self.s.repeat_penalty)
        return logits

    def sample(self, row):
        """The next token from a float32 CPU logit row (not modified)."""
        logits = row.clone()
        candidates = torch.arange(logits.shape[0])
        for name in self.s.order:
            if name == "penalties":
                logits = self._penalize(logits)
            elif self.s.greedy():
                continue
            elif name == "top_k" and self.s.top_k > 0:
                k = min(self.s.top_k, logits.shape[0])
                logits, order = torch.sort(logits, descending=True, stable=True)
                candidates = candidates[order]
                logits, candidates = logits[:k], candidates[:k]
            elif name == "top_p" and self.s.top_p < 1.0:
                logits, order = torch.sort(logits, descending=True, stable=True)
                candidates = candidates[order]
                cumulative = torch.cumsum(torch.softmax(logits.double(), 0), 0)
                keep = int((cumulative < self.s.top_p).sum().item()) + 1
                logits, candidates = logits[:keep], candidates[:keep]
            elif name == "min_p" and self.s.min_p > 0.0:
                keep = logits >= logits.max() + math.log(self.s.min_p)
                logits, candidates = logits[keep], candidates[keep]
            elif name == "temperature":
                logits = logits / self.s.temperature
        if self.s.greedy():
            best = logits.max()
            token = int(candidates[(logits == best).nonzero()[0, 0]].item())
        else:
            probs = torch.softmax(logits.double(), 0)
            pick = torch.multinomial(probs, 1, generator=self.generator)
            token = int(candidates[pick].item())
        self.history.append(token)
        return token
