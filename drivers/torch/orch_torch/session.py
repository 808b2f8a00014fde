"""One run of orch-driver-torch: load the GGUF, build the model, evaluate the
workload, emit one record per position (docs/drivers.md, "orch-driver-torch").

Teacher forcing: the text is tokenized as llama.cpp tokenizes it (BOS added
when the model asks), cut to `positions`, fed in chunks of `batch` tokens
with logits at every position; record j digests row j with target
tokens[j+1]. A context + continuation is tokenized in two parts (BOS on the
context only) and concatenated; done.continuation says which positions
target the continuation. Generation: the prompt, or the chat messages
rendered with the model's ChatML template (orch_driver.chat) and tokenized
with their special tokens, is prefilled, then per step the raw row
is digested, the sampler chain draws the next token from its own copy, and
the token is fed back, until max_tokens or an end-of-generation token.

Rows go to the sink with the CPU tensor that holds them as their owner: the
sink's digest workers (TorchEngine.digest_workers) digest them while the next
chunk or step is computed, and the records still go out in position order.

Loading (LoadedModel: the GGUF file, its tokenizer and the weights on their
devices) is apart from the run (Session), so that a session driver keeps one
LoadedModel for every job with the same load key (TorchEngine.load_key) and
runs each job on a fresh LlamaModel, KV cache and sampler: no state crosses
jobs.
"""

import copy
import os
import time

import torch

from orch_driver import bpe, chat, gguf, model_file
from orch_driver.errors import InvalidCombination, InvalidJob
from orch_driver.job import Workload
from orch_torch import effective as effective_mod
from orch_torch import weights as weights_mod
from orch_torch.dtypes import CACHE_DTYPES, DTYPES, torch_version
from orch_torch.llama import KvCache, LlamaModel
from orch_torch.sampler import Sampler


def job_devices(job, settings):
    """The torch devices the job runs on: the CPU, or tp CUDA devices from the
    first of the job's resources.gpu_ids."""
    if not settings.gpu():
        return [torch.device("cpu")]
    first = job.gpu_ids[0] if job.gpu_ids else 0
    return [torch.device("cuda", first + i) for i in range(settings.tp)]


def configure_torch(settings):
    """The process-wide torch settings of a job (threads, deterministic
    algorithms, TF32), set for every job: a session's jobs may differ."""
    threads = settings.threads if settings.threads > 0 else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if settings.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(bool(settings.deterministic))
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = bool(settings.matmul_tf32)
        torch.backends.cudnn.allow_tf32 = bool(settings.matmul_tf32)
    return threads


class LoadedModel:
    """What the jobs of one load key share: the checked GGUF file, its
    tokenizer, the config and the weights (impl orch) or the whole
    transformers model (impl transformers, whose attention is fixed at
    build). Never written to by a run."""

    def __init__(self, job, settings):
        configure_torch(settings)
        self.path, self.sha, self.file, self.mapped, self.file_type = \
            self._open_model(job, settings)
        self.devices = job_devices(job, settings)
        start = time.monotonic()
        self.config = weights_mod.LlamaConfig(self.file)
        dtype = DTYPES[settings.dtype]
        self.weights = None
        self.transformers = None
        if settings.impl == "transformers":
            from orch_torch.hf import TransformersModel
            self.transformers = TransformersModel(self.file, self.mapped, self.config,
                                                  settings, dtype, self.devices[0])
        else:
            self.weights = weights_mod.Weights(self.file, self.mapped, self.config, dtype,
                                               self.devices)
        self.load_ms = (time.monotonic() - start) * 1000.0
        self.tokenizer = self._tokenizer(self.file)
        self.jobs = 0

    @staticmethod
    def _open_model(job, settings):
        path, sha = model_file.check_model(job.model)
        try:
            file, mapped = gguf.open_gguf(path)
        except ValueError as error:
            raise InvalidJob(str(error))
        file_type = file.file_type()
        if settings.quant and settings.quant != file_type:
            raise InvalidCombination(
                'quant = "%s": the model file %s holds %s weights; the torch driver '
                "runs a file's own weights (q8_0 and q4_0 dequantized on load): pin "
                "a %s file as model.variants.%s" % (settings.quant, path, file_type or "unrecorded",
                                                    settings.quant, settings.quant))
        return path, sha, file, mapped, file_type

    @staticmethod
    def _tokenizer(file):
        try:
            return bpe.BpeTokenizer(file.kv)
        except bpe.Unsupported as error:
            return error

    def model_for(self, settings):
        """A fresh model object for one job over the shared weights."""
        if self.transformers is not None:
            return self.transformers
        return LlamaModel(self.config, self.weights, DTYPES[settings.dtype],
                          settings.resolved_attention(), settings.block)


class Session:
    def __init__(self, job, settings):
        self.job = job
        self.s = settings
        self.token_text = {}

    @staticmethod
    def _encode(tokenizer, text, what, **options):
        if isinstance(tokenizer, Exception):
            raise InvalidCombination("%s: %s" % (what, tokenizer))
        return tokenizer.encode(text, **options)

    def _prompt_tokens(self, tokenizer, file, path):
        """The prompt's tokens; for messages, also what done gains."""
        w = self.job.workload
        if not w.messages:
            return self._encode(tokenizer, w.prompt, "workload.prompt"), {}
        template = file.get(chat.TEMPLATE_KEY)
        rendered = chat.render(template if isinstance(template, str) else None, w.messages,
                               path)
        tokens = self._encode(tokenizer, rendered, "workload.messages", parse_special=True)
        return tokens, chat.done_fields(template, rendered)

    def _continuation_tokens(self, tokenizer):
        """Context (with BOS) + continuation (without), as the llama.cpp driver
        tokenizes them, and done's continuation object."""
        w = self.job.workload
        tokens = self._encode(tokenizer, w.context, "workload.context")
        rest = self._encode(tokenizer, w.continuation, "workload.continuation",
                            add_special=False)
        if not tokens:
            raise InvalidJob("workload %s.context: no tokens for this model (it adds no BOS); "
                             "the first continuation token needs a position before it" % w.name)
        if not rest:
            raise InvalidJob("workload %s.continuation: no tokens" % w.name)
        total = len(tokens) + len(rest)
        if w.positions not in (0, total):
            raise InvalidJob("workload %s.positions = %d: a context + continuation run "
                             "evaluates all its %d tokens; leave positions out or give %d"
                             % (w.name, w.positions, total, total))
        return tokens + rest, {"continuation": {"first_position": len(tokens) - 1,
                                                "tokens": len(rest)}}

    def _workload_tokens(self, tokenizer, vocab, file, path):
        """The tokens to feed and the fields done gains for them."""
        w = self.job.workload
        extra = {}
        if w.kind == Workload.GENERATE:
            tokens, extra = self._prompt_tokens(tokenizer, file, path)
            if not tokens:
                raise InvalidJob("workload.prompt: no tokens")
            return tokens, extra
        if w.continuation is not None:
            tokens, extra = self._continuation_tokens(tokenizer)
        elif w.tokens is not None:
            tokens = list(w.tokens)
        else:
            tokens = self._encode(tokenizer, w.text, "workload.text")
        wanted = max(0, w.positions)
        if wanted and len(tokens) > wanted:
            tokens = tokens[:wanted]
        if not tokens:
            raise InvalidJob("workload: no tokens to evaluate")
        if len(tokens) < wanted:
            raise InvalidJob("workload: the text is %d tokens for this model, fewer than "
                             "positions = %d; use a longer text or fewer positions"
                             % (len(tokens), wanted))
        for token in tokens:
            if token >= vocab:
                raise InvalidJob("workload.tokens: id %d is outside the model's vocabulary "
                                 "of %d" % (token, vocab))
        return tokens, extra

    def _capacity(self, needed):
        capacity = self.s.ctx if self.s.ctx > 0 else needed
        if needed > capacity:
            raise InvalidJob("coordinate.ctx = %d is smaller than the workload's %d tokens"
                             % (capacity, needed))
        return capacity

    def run(self, sink, loaded):
        """The job on `loaded` (a LoadedModel of the job's load key)."""
        threads = configure_torch(self.s)
        # The model file check of this job (requirement vs the file's sha256),
        # without hashing the file again.
        model = copy.copy(self.job.model)
        model.sha256 = model.sha256 or loaded.sha
        path, sha = model_file.check_model(model)
        file, config, devices, tokenizer = loaded.file, loaded.config, loaded.devices, \
            loaded.tokenizer
        load_ms = loaded.load_ms if loaded.jobs == 0 else 0.0
        loaded.jobs += 1
        model = loaded.model_for(self.s)
        effective_mod.observe(model, self.s.resolved_attention())
        tokens, extra = self._workload_tokens(tokenizer, config.vocab, file, path)
        kv = [CACHE_DTYPES[t] for t in self.s.kv]
        start = time.monotonic()
        if self.job.workload.kind == Workload.GENERATE:
            capacity = self._capacity(len(tokens) + self.job.workload.max_tokens)
            cache = model.new_cache(capacity, kv) if hasattr(model, "new_cache") else \
                KvCache(config, capacity, kv, model.w.layer_devices)
            done = self._generate(model, cache, tokens, sink, tokenizer, config.vocab, capacity)
        else:
            capacity = self._capacity(len(tokens))
            sink.plan_positions(len(tokens))
            cache = model.new_cache(capacity, kv) if hasattr(model, "new_cache") else \
                KvCache(config, capacity, kv, model.w.layer_devices)
            done = self._teacher_force(model, cache, tokens, sink, config.vocab)
        sink.finish()  # the last rows' records: evaluation ends with the last digest
        done.update(extra)
        done["eval_ms"] = (time.monotonic() - start) * 1000.0
        done["load_ms"] = load_ms
        done["token_text"] = self._token_text(sink.token_ids, tokenizer, file)
        dequantized = getattr(getattr(model, "w", None), "dequantized", lambda: [])()
        done["model"] = {"path": path, "sha256": sha, "type": loaded.file_type,
                         "quantized_from": "", "dequantized": dequantized,
                         "tensor_types": dict(sorted(getattr(getattr(model, "w", None),
                                                             "types", {}).items()))}
        done["ran"] = self._ran(threads, devices, capacity, config)
        done["effective"] = effective_mod.effective(self.s, model, cache)
        if dequantized:
            done["notes"] = ["%s weights dequantized on load to %s" % (
                "/".join(dequantized), self.s.dtype)]
        return done

    def _ran(self, threads, devices, capacity, config):
        s = self.s
        return {"torch": torch_version(), "impl": s.impl,
                "attention": s.resolved_attention(),
                "attention_block": s.block if s.resolved_attention() == "blocked" else None,
                "dtype": s.dtype, "kv": "/".join(s.kv),
                "matmul_tf32": bool(s.matmul_tf32),
                "deterministic": torch.are_deterministic_algorithms_enabled(),
                "threads": torch.get_num_threads(), "batch": s.batch or "all",
                "ctx": capacity, "devices": [str(d) for d in devices],
                "model": config.describe()}

    def _emit_rows(self, sink, logits, first, tokens, vocab, outputs=None):
        logits = logits.to("cpu").contiguous()
        base = logits.data_ptr()
        row_bytes = 4 * vocab
        for i in range(logits.shape[0]):
            position = first + i
            if outputs is None:
                target = tokens[position + 1] if position + 1 < len(tokens) else -1
                sink.emit(position, base + i * row_bytes, vocab, tokens[position], -1, target,
                          owner=logits)
            else:
                sink.emit(position, base + i * row_bytes, vocab, outputs[0], outputs[1], -1,
                          owner=logits)
        return logits

    def _teacher_force(self, model, cache, tokens, sink, vocab):
        chunk = self.s.batch if self.s.batch > 0 else len(tokens)
        for first in range(0, len(tokens), chunk):
            logits = model.forward(tokens[first:first + chunk], cache)
            self._emit_rows(sink, logits, first, tokens, vocab)
        return {}

    def _generate(self, model, cache, tokens, sink, tokenizer, vocab, capacity):
        sampler = Sampler(self.s.sampler, capacity)
        chunk = self.s.batch if self.s.batch > 0 else len(tokens)
        logits = None
        for first in range(0, len(tokens), chunk):
            logits = model.forward(tokens[first:first + chunk], cache, all_logits=False)
        generated = []
        stop = "max_tokens"
        eog = tokenizer.end_of_generation if not isinstance(tokenizer, Exception) else set()
        for step in range(self.job.workload.max_tokens):
            row = logits[-1].to("cpu").contiguous()
            token = sampler.sample(row)
            sink.emit(step, row.data_ptr(), vocab, tokens[-1], token, -1, owner=row)
            generated.append(token)
            if token in eog:
                stop = "eos"
                break
            tokens.append(token)
            if step + 1 < self.job.workload.max_tokens:
                logits = model.forward([token], cache, all_logits=False)
        text = b"".join(tokenizer.piece(t) for t in generated) \
            if not isinstance(tokenizer, Exception) else b""
        return {"generated_ids": generated,
                "generated_text": text.decode("utf-8", errors="replace"),
                "stop": stop, "generated_tokens": len(generated),
                "max_tokens": self.job.workload.max_tokens}

    def _token_text(self, ids, tokenizer, file):
        out = {}
        for token in sorted(ids):
            if isinstance(tokenizer, Exception):
                tokens = file.get("tokenizer.ggml.tokens") or []
                out[str(token)] = tokens[token] if token < len(tokens) else ""
            else:
                out[str(token)] = bpe.printable_text(tokenizer.piece(token))
        return out
