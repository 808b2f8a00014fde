"""Ollama (api/types.go, server/routes.go, docs/api.md):

- self-report: GET /api/version ({"version"}), POST /api/show (details:
  format, family, parameter_size, quantization_level; model_info; parameters);
- no prompt log-probabilities: teacher-forced workloads are refused
  (invalid_combination); generation only;
- log-probabilities of generated tokens since v0.12.11, at most 20
  (`top_logprobs`), and no token ids: each token comes as text and bytes. The
  driver maps bytes to ids through the vocabulary of the job's model file
  (the GGUF the Ollama model was made from), so records name ids as every
  other engine's do; bytes no token or several tokens spell are an
  engine_error naming them;
- POST /api/generate with the raw prompt (raw true: no template), stream
  false, and every sampler option explicit.
"""

import re

from orch_driver import axes, bpe, gguf
from orch_driver.axes import Axis
from orch_driver.errors import EngineError, InvalidCombination, ModelMissing
from orch_server import common, rows

FAMILY = "ollama"
DRIVER = "orch-driver-ollama"
L = common.LAUNCH
MIN_VERSION = (0, 12, 11)
MAX_TOP_LOGPROBS = 20

AXES = [
    axes.text("engine", "none: the server's version is checked against the label"),
    Axis("quant", values=("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                          "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s",
                          "q5_k_m", "q6_k"), noun="weight type",
         sets=L + "the model's weights; checked against /api/show quantization_level"),
    Axis("kv", values=("f16", "q8_0", "q4_0"), noun="cache type",
         sets=L + "OLLAMA_KV_CACHE_TYPE (no effect without flash attention)"),
    Axis("attention", values=("off", "on", "auto"), noun="flash attention mode",
         sets=L + "OLLAMA_FLASH_ATTENTION"),
    axes.text("hardware", L + "cpu or gpu..."),
    axes.count("ctx", 1, "request option num_ctx"),
    common.slots_axis("OLLAMA_NUM_PARALLEL"),
    axes.text("chat_template", "none: prompts are sent raw"),
] + common.LOAD_AXES + common.SAMPLER_AXES + [
    Axis("sampler.repeat_last_n", axes.INTEGER, "count", min=-1, max=1 << 30,
         sets="request option repeat_last_n"),
]

RULES = []

CAPTURE_PATHS = {"generate": "generate-bytes"}


def parse_version(text):
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(g) for g in match.groups()) if match else None


def self_report(client, model):
    doc = client.get("/api/version")
    version = doc.get("version") if isinstance(doc, dict) else None
    parsed = parse_version(version if isinstance(version, str) else "")
    if parsed is None:
        raise EngineError("%s: no Ollama version in %s (expected {\"version\": \"X.Y.Z\"})"
                          % (client.url("/api/version"), common.short(doc)))
    if parsed < MIN_VERSION:
        raise InvalidCombination("the server at %s is Ollama %s, which returns no "
                                 "log-probabilities (they came in 0.12.11); use a newer Ollama"
                                 % (client.url("/api/version"), version))
    try:
        show = client.post("/api/show", {"model": model})
    except EngineError as error:
        if getattr(error, "status", 0) == 404:
            raise InvalidCombination("the Ollama server at %s has no model \"%s\" (%s)"
                                     % (client.base_url, model, error.message))
        raise
    details = show.get("details") if isinstance(show, dict) else None
    details = details if isinstance(details, dict) else {}
    reported = {"model": model, "details": details,
                "parameters": show.get("parameters") if isinstance(show, dict) else None}
    return {"version": version, "build": {"ollama": version},
            "kernel_path": "unreported (Ollama does not report its kernels)",
            "reported": reported, "model": model}


def check(job, report, url):
    level = report["reported"]["details"].get("quantization_level")
    if isinstance(level, str) and level:
        common.check_axis(job, "quant", level.lower(), url, "/api/show quantization_level")


def request_for(model, prompt, k, sampling, num_predict, num_ctx=0):
    options = {"temperature": sampling.temperature, "top_k": sampling.top_k_or_off(0),
               "top_p": sampling.top_p, "min_p": sampling.min_p, "typical_p": 1.0,
               "repeat_penalty": sampling.repeat_penalty,
               "repeat_last_n": sampling.repeat_last_n, "presence_penalty": 0.0,
               "frequency_penalty": 0.0, "seed": sampling.seed, "num_predict": num_predict}
    if num_ctx:
        options["num_ctx"] = num_ctx
    return {"model": model, "prompt": prompt, "raw": True, "stream": False,
            "logprobs": True, "top_logprobs": k, "options": options}


class Vocabulary:
    """Token bytes -> id, from a GGUF's tokenizer.ggml.* metadata."""

    def __init__(self, kv):
        tokens = kv.get("tokenizer.ggml.tokens") or []
        types = kv.get("tokenizer.ggml.token_type") or [bpe.NORMAL] * len(tokens)
        spm = kv.get("tokenizer.ggml.model") == "llama"
        self.ids = {}
        for token, (text, kind) in enumerate(zip(tokens, types)):
            if kind in (bpe.CONTROL, bpe.UNUSED):
                continue
            data = self._bytes(text, kind, spm)
            if data:
                self.ids.setdefault(data, []).append(token)

    @staticmethod
    def _bytes(text, kind, spm):
        if spm:
            match = re.match(r"^<0x([0-9A-Fa-f]{2})>$", text)
            if kind == bpe.BYTE and match:
                return bytes([int(match.group(1), 16)])
            return text.replace("\u2581", " ").encode("utf-8")
        if kind == bpe.USER_DEFINED:
            return text.encode("utf-8")
        return bytes(bpe._CHAR_TO_BYTE[c] for c in text if c in bpe._CHAR_TO_BYTE)

    def id_of(self, data, url, where):
        found = self.ids.get(bytes(data), [])
        if len(found) != 1:
            raise EngineError("%s: %s: the bytes %r are %s in the model's vocabulary, so the "
                              "token id is unknown" % (url, where, bytes(data),
                                                       "no token" if not found else
                                                       "tokens %s" % found))
        return found[0]


def load_vocabulary(model):
    if not model.path:
        raise ModelMissing('model "%s" is not on this agent: the Ollama driver needs the '
                           "model's GGUF to map token bytes to ids" % model.requirement)
    try:
        file, mapped = gguf.open_gguf(model.path)
    except (OSError, ValueError) as error:
        raise ModelMissing("model file %s: %s" % (model.path, error))
    try:
        return Vocabulary(file.kv)
    finally:
        mapped.close()


def _token_bytes(entry, url, where):
    data = entry.get("bytes")
    if isinstance(data, list) and all(isinstance(b, int) and 0 <= b < 256 for b in data):
        return bytes(data)
    text = entry.get("token")
    if isinstance(text, str):  # before v0.13.0: no bytes
        return text.encode("utf-8")
    raise common.malformed(url, "%s: neither bytes nor token" % where)


def parse_response(doc, vocabulary, k, url, processed=False):
    """Rows of one /api/generate answer, ids from the vocabulary."""
    logprobs = common.need(doc, "logprobs", list, url, "answer")
    out = []
    previous = -1
    for step, entry in enumerate(logprobs):
        where = "logprobs[%d]" % step
        if not isinstance(entry, dict):
            raise common.malformed(url, where + ": expected an object")
        token = vocabulary.id_of(_token_bytes(entry, url, where), url, where)
        tops = entry.get("top_logprobs")
        if not isinstance(tops, list):
            raise common.malformed(url, where + ".top_logprobs: expected an array")
        pairs = []
        for i, top in enumerate(tops):
            at = "%s.top_logprobs[%d]" % (where, i)
            if not isinstance(top, dict):
                raise common.malformed(url, at + ": expected an object")
            pairs.append((vocabulary.id_of(_token_bytes(top, url, at), url, at),
                          common.number(top.get("logprob"), url, at + ".logprob")))
        common.check_count(pairs, k, url, step)
        out.append(rows.row(step, common.best(pairs, k), input_token=previous,
                            output_token=token, processed=processed))
        previous = token
    text = doc.get("response", "")
    return out, text if isinstance(text, str) else "", doc.get("done_reason", "")


def check_top_k(k, url):
    if k > MAX_TOP_LOGPROBS:
        raise InvalidCombination("capture.top_logits = %d, but Ollama (%s) returns at most %d "
                                 "log-probabilities per token; plan capture.top_logits <= %d"
                                 % (k, url, MAX_TOP_LOGPROBS, MAX_TOP_LOGPROBS))


def generate(client, job, k, emit, model):
    check_top_k(k, client.base_url)
    vocabulary = load_vocabulary(job.model)
    w = job.workload
    body = request_for(model, w.prompt, k, common.Sampling(job.settings), w.max_tokens,
                       job.settings.get("ctx", 0))
    doc = client.post("/api/generate", body)
    produced, text, finish = parse_response(doc, vocabulary, k, client.url("/api/generate"))
    emit(produced)
    generated = [r.output_token for r in produced]
    return {"capture_path": CAPTURE_PATHS["generate"], "generated_ids": generated,
            "generated_text": text, "stop": finish if isinstance(finish, str) else "",
            "generated_tokens": len(generated), "max_tokens": w.max_tokens}


def background_request(prompt, max_tokens, job, model):
    """One background generation of load.concurrency (orch_server/load.py); the
    measured job's num_ctx, so that the server does not reload the model."""
    sampling = common.Sampling(common.BACKGROUND_SAMPLING)
    return "/api/generate", request_for(model, prompt, 1, sampling, max_tokens,
                                        job.settings.get("ctx", 0))
