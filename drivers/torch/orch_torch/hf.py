"""impl = "transformers": transformers' LlamaForCausalLM built from the same
GGUF's hyperparameters and weights, its attn_implementation set from the
attention axis (off/eager -> "eager", auto/sdpa* -> "sdpa" (an sdpa* backend
pinned with sdpa_kernel around each forward), flash_attention_2 ->
"flash_attention_2").

GGUF stores Q and K permuted for llama.cpp's adjacent-pair RoPE
(convert_hf_to_gguf.py's permute); they are permuted back to transformers'
half-split layout here. Unverified: the build machines have no transformers.
"""

import contextlib

import torch

from orch_torch import attention as attention_mod
from orch_torch import weights as weights_mod


def _unpermute(w, heads):
    # Inverse of convert_hf_to_gguf's permute(w, n_head):
    # w.reshape(n_head, 2, d // n_head // 2, ...).swapaxes(1, 2).reshape(w.shape)
    out_dim = w.shape[0]
    return (w.reshape(heads, out_dim // heads // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _attn_implementation(resolved):
    if resolved == "eager":
        return "eager"
    if resolved == "flash_attention_2":
        return "flash_attention_2"
    return "sdpa"


class TransformersCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.length = 0
        self.past = None


class TransformersModel:
    def __init__(self, gguf, mapped, config, settings, dtype, device):
        from transformers import LlamaConfig, LlamaForCausalLM
        self.config = config
        self.dtype = dtype
        self.device = device
        self.resolved = settings.resolved_attention()
        hf_config = LlamaConfig(
            vocab_size=config.vocab, hidden_size=config.embd,
            intermediate_size=config.ff, num_hidden_layers=config.layers,
            num_attention_heads=config.heads, num_key_value_heads=config.kv_heads,
            rms_norm_eps=config.eps, rope_theta=config.rope_base,
            max_position_embeddings=config.ctx_train,
            tie_word_embeddings="output.weight" not in gguf.tensors)
        model = LlamaForCausalLM._from_config(
            hf_config, attn_implementation=_attn_implementation(self.resolved),
            torch_dtype=dtype)
        model.load_state_dict(self._state_dict(gguf, mapped, config, dtype),
                              strict=False)
        self.model = model.to(device).eval()
        self.types = {}

    def _state_dict(self, gguf, mapped, config, dtype):
        read = lambda name: weights_mod.tensor_f32_or_native(gguf, mapped, name).to(dtype)
        state = {"model.embed_tokens.weight": read("token_embd.weight"),
                 "model.norm.weight": read("output_norm.weight")}
        if "output.weight" in gguf.tensors:
            state["lm_head.weight"] = read("output.weight")
        names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
        for l in range(config.layers):
            for ours, theirs in names.items():
                w = read("blk.%d.%s.weight" % (l, ours))
                if ours == "attn_q":
                    w = _unpermute(w, config.heads)
                elif ours == "attn_k":
                    w = _unpermute(w, config.kv_heads)
                state["model.layers.%d.%s.weight" % (l, theirs)] = w
        return state

    def new_cache(self, capacity, kv_dtypes):
        return TransformersCache(capacity)

    def _context(self):
        if self.resolved in attention_mod.SDPA_BACKENDS:
            return attention_mod._backend_context(self.resolved)
        return contextlib.nullcontext()

    @torch.no_grad()
    def forward(self, tokens, cache, all_logits=True):
        ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        with self._context():
            out = self.model(input_ids=ids, past_key_values=cache.past, use_cache=True)
        cache.past = out.past_key_values
        cache.length += len(tokens)
        logits = out.logits[0]
        return (logits if all_logits else logits[-1:]).float()
