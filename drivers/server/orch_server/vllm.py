"""vLLM's OpenAI-compatible server (vllm/entrypoints/openai, completion
protocol and serving code; docs "Online serving"):

- self-report: GET /version ({"version"}), GET /v1/models (id, root,
  max_model_len), GET /server_info?config_format=json (the engine config; only
  with VLLM_SERVER_DEV_MODE=1, absent otherwise);
- teacher forcing: POST /v1/completions with the token ids as `prompt`,
  max_tokens 1, temperature 0, prompt_logprobs K and logprobs K,
  return_tokens_as_token_ids true. choices[0].prompt_logprobs[i] maps token
  ids to {logprob, rank, decoded_token}: the top K of the row that predicted
  prompt token i plus that token (entry 0 is null); the generated token's
  top_logprobs give the last row. K is capped by --max-logprobs (default 20);
  values are the raw log-softmax (--logprobs-mode raw_logprobs, the default);
- generation: the same endpoint with every sampling field explicit (the
  server fills absent ones from generation_config.json).
"""

import re

from orch_driver import axes
from orch_driver.axes import Axis, Condition, Rule
from orch_driver.errors import EngineError, InvalidCombination
from orch_server import common, rows

FAMILY = "vllm"
DRIVER = "orch-driver-vllm"
L = common.LAUNCH

AXES = [
    axes.text("engine", "none: the server's version is checked against the label"),
    Axis("quant", values=("bf16", "fp16", "fp32", "fp8", "w8a16", "w8a8", "w4a16", "nvfp4",
                          "mxfp4", "awq", "gptq", "bitsandbytes", "gguf"), noun="weight format",
         sets=L + "the checkpoint the server loaded (--quantization)"),
    Axis("kv", values=("auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4"),
         noun="cache type", sets=L + "--kv-cache-dtype (int8/int4: patched builds)"),
    Axis("attention", values=("auto", "triton", "flash_attn", "flash_attn_2", "flash_attn_3",
                              "flashinfer", "xformers", "torch_sdpa", "flex_attention"),
         noun="attention backend", sets=L + "--attention-backend (read back from the log: "
         "VLLM_ATTENTION_BACKEND is ignored by newer releases)"),
    axes.count("tp", 1, L + "--tensor-parallel-size"),
    axes.text("hardware", L + "GPU class"),
    axes.count("ctx", 1, L + "--max-model-len; checked against /v1/models max_model_len"),
    common.slots_axis("--max-num-seqs"),
    common.switch("batch_invariant", "VLLM_BATCH_INVARIANT=1"),
    common.switch("prefix_cache", "--enable-prefix-caching / --no-enable-prefix-caching "
                  "(requests with prompt_logprobs skip prefix-cache reads)"),
    Axis("head_dtype", values=("auto", "float32"), noun="LM head dtype",
         sets=L + "--hf-overrides '{\"head_dtype\": \"float32\"}' (auto: the model dtype)"),
    axes.text("chat_template", "none: workloads are sent as raw prompts"),
] + common.LOAD_AXES + common.SAMPLER_AXES

RULES = [
    Rule(Condition("tp", min=2), Condition("hardware", prefix="gpu"),
         "vLLM splits tensors only across GPUs; use tp = 1 on CPU"),
]

CAPTURE_PATHS = {"teacher_forced": "prompt-logprobs", "generate": "generate"}
_MAX_ALLOWED = re.compile(r"max allowed:? *(-?\d+)")


def self_report(client):
    doc = client.get("/version")
    version = doc.get("version") if isinstance(doc, dict) else None
    if not isinstance(version, str) or not re.match(r"^\d+\.\d+", version):
        raise EngineError("%s: no vLLM version in %s (expected {\"version\": \"X.Y.Z\"})"
                          % (client.url("/version"), common.short(doc)))
    models = common.need(client.get("/v1/models"), "data", list, client.url("/v1/models"),
                         "answer")
    if not models or not isinstance(models[0], dict):
        raise common.malformed(client.url("/v1/models"), "data: no model is served")
    model = models[0]
    reported = {"model": model.get("id"), "root": model.get("root"),
                "max_model_len": model.get("max_model_len"),
                "models": [m.get("id") for m in models if isinstance(m, dict)]}
    try:
        info = client.get("/server_info?config_format=json")
        reported["server_info"] = info if isinstance(info, dict) else None
    except EngineError:
        reported["server_info"] = "unavailable (the server runs without VLLM_SERVER_DEV_MODE=1)"
    return {"version": version, "build": {"vllm": version},
            "kernel_path": "unreported (the attention backend is in the server's log)",
            "reported": reported, "model": model.get("id", "")}


def check(job, report, url):
    r = report["reported"]
    common.check_axis(job, "ctx", r.get("max_model_len"), url, "/v1/models max_model_len")


# vllm/platforms/cuda.py (recent releases): "Using %s attention backend out of potential
# backends: %s." with the backend's enum name; the value of the attention axis it is.
_BACKEND_LINE = re.compile(r"Using (\S+) attention backend out of potential backends")
_BACKEND_VALUES = {"FLASH_ATTN": "flash_attn", "FLASHINFER": "flashinfer",
                   "TRITON_ATTN": "triton", "FLEX_ATTENTION": "flex_attention",
                   "TORCH_SDPA": "torch_sdpa", "XFORMERS": "xformers"}


def effective_from_log(text):
    """What a launched server's log says it chose: {"attention": value, "attention_line":
    the line}, or {} when the log names no attention backend (yet). The last such line
    counts (a restarted engine logs it again)."""
    found = {}
    for line in text.splitlines():
        m = _BACKEND_LINE.search(line)
        if m:
            name = m.group(1).split(".")[-1]  # "AttentionBackendEnum.FLASH_ATTN" in some releases
            found = {"attention": _BACKEND_VALUES.get(name, name.lower()),
                     "attention_line": line.strip()[-300:]}
    return found


def same_attention(requested, effective):
    """auto takes whatever the server chose; flash_attn_2 and _3 are vLLM's FLASH_ATTN."""
    return requested in ("auto", effective) or (
        effective == "flash_attn" and requested.startswith("flash_attn"))


LOG_CHECKS = {"attention": same_attention}


def request_for(model, prompt, k, sampling, max_tokens=1, teacher_forced=True):
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "n": 1,
            "stream": False, "echo": False, "temperature": sampling.temperature,
            "top_p": sampling.top_p, "top_k": sampling.top_k_or_off(-1), "min_p": sampling.min_p,
            "repetition_penalty": sampling.repeat_penalty, "presence_penalty": 0.0,
            "frequency_penalty": 0.0, "seed": sampling.seed, "ignore_eos": False,
            "logprobs": k, "return_tokens_as_token_ids": True, "skip_special_tokens": False}
    if teacher_forced:
        body["prompt_logprobs"] = k
    return body


def _id_key(key, url, where):
    text = key[len("token_id:"):] if key.startswith("token_id:") else key
    if not text.isdigit():
        raise common.malformed(url, '%s: key "%s" is not a token id' % (where, key[:40]))
    return int(text)


def _top(entry, k, url, where, position):
    """The k best (id, logprob) of one top_logprobs dict {"token_id:N": lp}."""
    if not isinstance(entry, dict):
        raise common.malformed(url, "%s: expected an object, got %s" % (where, common.short(entry)))
    pairs = [(_id_key(key, url, where), common.number(v, url, "%s[%s]" % (where, key)))
             for key, v in entry.items()]
    common.check_count(pairs, k, url, position)
    return common.best(pairs, k)


def _prompt_row(entry, k, url, where, position, target, input_token):
    """Row `position` from prompt_logprobs[position + 1]: {id: {logprob, rank}}."""
    if not isinstance(entry, dict):
        raise common.malformed(url, "%s: expected an object, got %s" % (where, common.short(entry)))
    ranked = []
    target_logprob = None
    for key, value in entry.items():
        token = _id_key(key, url, where)
        at = "%s[%s]" % (where, key)
        if not isinstance(value, dict):
            raise common.malformed(url, "%s: expected {logprob, rank}" % at)
        logprob = common.number(value.get("logprob"), url, at + ".logprob")
        rank = value.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise common.malformed(url, "%s.rank: expected an integer, got %s"
                                   % (at, common.short(rank)))
        if token == target:
            target_logprob = logprob
        if rank <= k:
            ranked.append((rank, token, logprob))
    if target_logprob is None:
        raise common.malformed(url, "%s: no entry for the prompt token %d" % (where, target))
    pairs = [(token, logprob) for _, token, logprob in sorted(ranked)]
    common.check_count(pairs, k, url, position)
    return rows.row(position, pairs[:k], target, target_logprob, input_token, -1)


def _choice(doc, url):
    choices = common.need(doc, "choices", list, url, "answer")
    if not choices or not isinstance(choices[0], dict):
        raise common.malformed(url, "choices: empty")
    return choices[0]


def _generated(choice, url):
    logprobs = common.need(choice, "logprobs", dict, url, "choices[0]")
    tops = common.need(logprobs, "top_logprobs", list, url, "choices[0].logprobs")
    tokens = common.need(logprobs, "tokens", list, url, "choices[0].logprobs")
    if len(tokens) != len(tops):
        raise common.malformed(url, "choices[0].logprobs: %d tokens, %d top_logprobs"
                               % (len(tokens), len(tops)))
    ids = [_id_key(t, url, "choices[0].logprobs.tokens") if isinstance(t, str) else
           common.token_id(None, url, "choices[0].logprobs.tokens") for t in tokens]
    return ids, tops


def parse_response(doc, tokens, k, url):
    """Teacher forcing: one row per token of `tokens`, row j predicting
    tokens[j + 1] (the last from the generated token's top_logprobs)."""
    choice = _choice(doc, url)
    prompt = common.need(choice, "prompt_logprobs", list, url, "choices[0]")
    if len(prompt) != len(tokens):
        raise common.malformed(url, "choices[0].prompt_logprobs has %d entries for a prompt of "
                               "%d tokens" % (len(prompt), len(tokens)))
    out = []
    for j in range(len(tokens) - 1):
        out.append(_prompt_row(prompt[j + 1], k, url, "choices[0].prompt_logprobs[%d]" % (j + 1),
                               j, tokens[j + 1], tokens[j]))
    _, tops = _generated(choice, url)
    if not tops:
        raise common.malformed(url, "choices[0].logprobs.top_logprobs is empty")
    last = len(tokens) - 1
    out.append(rows.row(last, _top(tops[0], k, url, "choices[0].logprobs.top_logprobs[0]", last),
                        input_token=tokens[last]))
    return out


def parse_generation(doc, prompt_last, k, url):
    choice = _choice(doc, url)
    ids, tops = _generated(choice, url)
    out = []
    previous = prompt_last
    for step, (token, top) in enumerate(zip(ids, tops)):
        where = "choices[0].logprobs.top_logprobs[%d]" % step
        out.append(rows.row(step, _top(top, k, url, where, step), input_token=previous,
                            output_token=token))
        previous = token
    text = choice.get("text", "")
    return out, (text if isinstance(text, str) else ""), choice.get("finish_reason", "")


def refused_top_k(error, k, url):
    """The server's "greater than max allowed: N" as invalid_combination."""
    match = _MAX_ALLOWED.search(error.body_text()) if error.status == 400 else None
    if not match:
        return error
    return InvalidCombination(
        "capture.top_logits = %d, but the server at %s returns at most %s log-probabilities "
        "(--max-logprobs); plan capture.top_logits <= %s or launch it with --max-logprobs %d"
        % (k, url, match.group(1), match.group(1), k))


def _post(client, body, k):
    try:
        return client.post("/v1/completions", body)
    except EngineError as error:
        if hasattr(error, "body_text"):
            raise refused_top_k(error, k, client.url("/v1/completions"))
        raise


def tokenize(client, model, text):
    url = client.url("/tokenize")
    doc = client.post("/tokenize", {"model": model, "prompt": text, "add_special_tokens": True})
    return [common.token_id(t, url, "tokens") for t in common.need(doc, "tokens", list, url,
                                                                   "answer")]


def teacher_force(client, job, tokens, k, emit, model):
    doc = _post(client, request_for(model, tokens, k, common.Sampling({})), k)
    emit(parse_response(doc, tokens, k, client.url("/v1/completions")))
    return {"capture_path": CAPTURE_PATHS["teacher_forced"]}


def generate(client, job, k, emit, model):
    w = job.workload
    prompt = tokenize(client, model, w.prompt)
    if not prompt:
        raise EngineError("%s: the prompt tokenized to no tokens" % client.url("/tokenize"))
    body = request_for(model, prompt, k, common.Sampling(job.settings), w.max_tokens, False)
    doc = _post(client, body, k)
    produced, text, finish = parse_generation(doc, prompt[-1], k, client.url("/v1/completions"))
    emit(produced)
    generated = [r.output_token for r in produced]
    return {"capture_path": CAPTURE_PATHS["generate"], "generated_ids": generated,
            "generated_text": text, "stop": finish or "", "generated_tokens": len(generated),
            "max_tokens": w.max_tokens}


def background_request(prompt, max_tokens, job, model):
    """One background generation of load.concurrency (orch_server/load.py)."""
    sampling = common.Sampling(common.BACKGROUND_SAMPLING)
    return "/v1/completions", request_for(model, prompt, 1, sampling, max_tokens, False)
