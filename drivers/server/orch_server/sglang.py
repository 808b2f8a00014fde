"""SGLang's native server (docs/basic_usage/sampling_params.md,
io_struct.GenerateReqInput):

- self-report: GET /get_server_info (newer: /server_info; the server args
  as a flat object, "version"), GET /get_model_info (model_path);
- teacher forcing: POST /generate with `input_ids`, return_logprob true,
  logprob_start_len 0, top_logprobs_num K, max_new_tokens 1 at temperature 0.
  meta_info.input_token_logprobs[i] = [logprob, id, text] of prompt token i
  and input_top_logprobs[i] the top K of the row that predicted it (entry 0
  null); output_top_logprobs[0] is the last row. No cap of 20; values are the
  raw log-softmax for greedy requests (code reading: prompt logprobs are
  temperature-scaled only on request, output logprobs are raw when the whole
  batch is greedy);
- generation: the same endpoint with max_new_tokens and every sampling field
  (the server's --sampling-defaults model would fill absent ones from
  generation_config.json); rows of a non-greedy request are marked processed
  (after temperature, unless SGLANG_RETURN_ORIGINAL_LOGPROB is set).
"""

import re

from orch_driver import axes
from orch_driver.axes import Axis, Condition, Rule
from orch_driver.errors import EngineError
from orch_server import common, rows

FAMILY = "sglang"
DRIVER = "orch-driver-sglang"
L = common.LAUNCH

AXES = [
    axes.text("engine", "none: the server's version is checked against the label"),
    Axis("quant", values=("bf16", "fp16", "fp32", "fp8", "w8a8", "w4a16", "nvfp4", "mxfp4",
                          "awq", "gptq", "gguf"), noun="weight format",
         sets=L + "the checkpoint the server loaded (--quantization)"),
    Axis("kv", values=("auto", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp4"), noun="cache type",
         sets=L + "--kv-cache-dtype; checked against server_info kv_cache_dtype"),
    Axis("attention", values=("auto", "flashinfer", "fa3", "fa4", "triton", "torch_native",
                              "flex_attention", "trtllm_mha", "aiter"),
         noun="attention backend", sets=L + "--attention-backend; checked against server_info"),
    axes.count("tp", 1, L + "--tp-size; checked against server_info tp_size"),
    axes.text("hardware", L + "GPU class"),
    axes.count("ctx", 1, L + "--context-length; checked against server_info context_length"),
    common.slots_axis("--max-running-requests (checked against server_info)"),
    common.switch("batch_invariant", "--enable-deterministic-inference (checked)"),
    common.switch("prefix_cache", "radix cache: --disable-radix-cache when off (checked)"),
    Axis("head_dtype", values=("auto", "float32"), noun="LM head dtype",
         sets=L + "--enable-fp32-lm-head for float32 (checked)"),
    axes.text("chat_template", "none: workloads are sent as raw prompts"),
] + common.LOAD_AXES + common.SAMPLER_AXES

RULES = [
    Rule(Condition("tp", min=2), Condition("hardware", prefix="gpu"),
         "SGLang splits tensors only across GPUs; use tp = 1 on CPU"),
]

CAPTURE_PATHS = {"teacher_forced": "prompt-logprobs", "generate": "generate"}


def _server_info(client):
    try:
        return client.get("/get_server_info"), "/get_server_info"
    except EngineError as error:
        if getattr(error, "status", 0) != 404:
            raise
    return client.get("/server_info"), "/server_info"


def self_report(client):
    info, path = _server_info(client)
    version = info.get("version") if isinstance(info, dict) else None
    if not isinstance(version, str) or not re.match(r"^\d+\.\d+", version):
        raise EngineError("%s: no SGLang version in the answer (expected \"version\": "
                          "\"X.Y.Z\"; got %s)" % (client.url(path), common.short(info)))
    model = client.get("/get_model_info")
    model = model if isinstance(model, dict) else {}
    keys = ("model_path", "context_length", "max_running_requests", "disable_radix_cache",
            "attention_backend", "kv_cache_dtype", "tp_size", "dp_size", "dtype",
            "enable_deterministic_inference", "enable_fp32_lm_head", "random_seed",
            "sampling_defaults", "chunked_prefill_size", "disable_cuda_graph", "quantization")
    reported = {k: info.get(k) for k in keys if k in info}
    reported["model_info"] = model
    return {"version": version, "build": {"sglang": version},
            "kernel_path": "attention %s" % info.get("attention_backend", "unreported"),
            "reported": reported, "model": model.get("model_path", "")}


def check(job, report, url):
    r = report["reported"]
    common.check_axis(job, "ctx", r.get("context_length"), url, "server_info context_length")
    common.check_axis(job, "slots", r.get("max_running_requests"), url,
                      "server_info max_running_requests")
    common.check_axis(job, "tp", r.get("tp_size"), url, "server_info tp_size")
    if r.get("disable_radix_cache") is not None:
        common.check_axis(job, "prefix_cache", not r["disable_radix_cache"], url,
                          "server_info disable_radix_cache")
    common.check_axis(job, "batch_invariant", r.get("enable_deterministic_inference"), url,
                      "server_info enable_deterministic_inference")
    if r.get("enable_fp32_lm_head") is not None:
        common.check_axis(job, "head_dtype", "float32" if r["enable_fp32_lm_head"] else "auto",
                          url, "server_info enable_fp32_lm_head")
    for axis, key in (("attention", "attention_backend"), ("kv", "kv_cache_dtype")):
        value = r.get(key)
        if isinstance(value, str) or value is None:
            common.check_axis(job, axis, value if value else None, url, "server_info " + key)


def request_for(prompt, k, sampling, max_new_tokens=1, teacher_forced=True):
    """`prompt`: token ids (input_ids) or text."""
    body = {"sampling_params": {
        "max_new_tokens": max_new_tokens, "temperature": sampling.temperature,
        "top_p": sampling.top_p, "top_k": sampling.top_k_or_off(-1), "min_p": sampling.min_p,
        "repetition_penalty": sampling.repeat_penalty, "frequency_penalty": 0.0,
        "presence_penalty": 0.0, "sampling_seed": sampling.seed, "ignore_eos": False,
        "skip_special_tokens": False},
        "return_logprob": True, "top_logprobs_num": k, "return_text_in_logprobs": False,
        "logprob_start_len": 0 if teacher_forced else -1, "stream": False}
    body["input_ids" if isinstance(prompt, list) else "text"] = prompt
    return body


def _entry(value, url, where, allow_null_logprob=False):
    """[logprob, id, text] -> (id, logprob)."""
    if not isinstance(value, list) or len(value) < 2:
        raise common.malformed(url, "%s: expected [logprob, id, text], got %s"
                               % (where, common.short(value)))
    token = common.token_id(value[1], url, where + "[1]")
    if value[0] is None and allow_null_logprob:
        return token, None
    return token, common.number(value[0], url, where + "[0]")


def _top(value, k, url, where, position):
    if not isinstance(value, list):
        raise common.malformed(url, "%s: expected an array, got %s" % (where, common.short(value)))
    pairs = [_entry(v, url, "%s[%d]" % (where, i)) for i, v in enumerate(value)]
    common.check_count(pairs, k, url, position)
    return common.best(pairs, k)


def parse_response(doc, k, url, positions=0):
    """Teacher forcing: (rows, token ids) from one /generate answer; the ids
    come from input_token_logprobs (so a text prompt works too), cut to
    `positions` when it is not 0."""
    meta = common.need(doc, "meta_info", dict, url, "answer")
    inputs = common.need(meta, "input_token_logprobs", list, url, "meta_info")
    tops = common.need(meta, "input_top_logprobs", list, url, "meta_info")
    if len(tops) != len(inputs) or not inputs:
        raise common.malformed(url, "meta_info: %d input_token_logprobs, %d input_top_logprobs"
                               % (len(inputs), len(tops)))
    entries = [_entry(v, url, "meta_info.input_token_logprobs[%d]" % i, allow_null_logprob=True)
               for i, v in enumerate(inputs)]
    tokens = [token for token, _ in entries]
    count = min(positions, len(tokens)) if positions else len(tokens)
    out = []
    for j in range(count - 1):
        where = "meta_info.input_top_logprobs[%d]" % (j + 1)
        target, target_logprob = entries[j + 1]
        if target_logprob is None:
            raise common.malformed(url, "meta_info.input_token_logprobs[%d]: no logprob" % (j + 1))
        out.append(rows.row(j, _top(tops[j + 1], k, url, where, j), target, target_logprob,
                            tokens[j], -1))
    last = count - 1
    if count < len(tokens):  # the last row is the next prompt position's
        target, target_logprob = entries[count]
        top = _top(tops[count], k, url, "meta_info.input_top_logprobs[%d]" % count, last)
        out.append(rows.row(last, top, target, target_logprob, tokens[last], -1))
    else:
        outputs = common.need(meta, "output_top_logprobs", list, url, "meta_info")
        if not outputs:
            raise common.malformed(url, "meta_info.output_top_logprobs is empty")
        top = _top(outputs[0], k, url, "meta_info.output_top_logprobs[0]", last)
        out.append(rows.row(last, top, input_token=tokens[last]))
    return out, tokens[:count]


def parse_generation(doc, prompt_last, k, url, processed):
    meta = common.need(doc, "meta_info", dict, url, "answer")
    chosen = common.need(meta, "output_token_logprobs", list, url, "meta_info")
    tops = common.need(meta, "output_top_logprobs", list, url, "meta_info")
    if len(chosen) != len(tops):
        raise common.malformed(url, "meta_info: %d output_token_logprobs, %d output_top_logprobs"
                               % (len(chosen), len(tops)))
    out = []
    previous = prompt_last
    for step, (entry, top) in enumerate(zip(chosen, tops)):
        token, _ = _entry(entry, url, "meta_info.output_token_logprobs[%d]" % step)
        pairs = _top(top, k, url, "meta_info.output_top_logprobs[%d]" % step, step)
        out.append(rows.row(step, pairs, input_token=previous, output_token=token,
                            processed=processed))
        previous = token
    text = doc.get("text", "") if isinstance(doc, dict) else ""
    return out, text if isinstance(text, str) else "", meta.get("finish_reason")


def teacher_force(client, job, tokens, k, emit, model):
    prompt = tokens if tokens is not None else job.workload.text
    doc = client.post("/generate", request_for(prompt, k, common.Sampling({})))
    produced, ids = parse_response(doc, k, client.url("/generate"), job.workload.positions)
    if job.workload.positions and len(ids) < job.workload.positions:
        raise EngineError("workload: the text is %d tokens for this model, fewer than positions = "
                          "%d; use a longer text or fewer positions" % (len(ids),
                                                                        job.workload.positions))
    emit(produced)
    return {"capture_path": CAPTURE_PATHS["teacher_forced"], "input_ids": len(ids)}


def generate(client, job, k, emit, model):
    w = job.workload
    sampling = common.Sampling(job.settings)
    doc = client.post("/generate", request_for(w.prompt, k, sampling, w.max_tokens, False))
    produced, text, finish = parse_generation(doc, -1, k, client.url("/generate"),
                                              not sampling.greedy())
    emit(produced)
    generated = [r.output_token for r in produced]
    return {"capture_path": CAPTURE_PATHS["generate"], "generated_ids": generated,
            "generated_text": text, "stop": common.short(finish) if finish else "",
            "generated_tokens": len(generated), "max_tokens": w.max_tokens}


def background_request(prompt, max_tokens, job, model):
    """One background generation of load.concurrency (orch_server/load.py)."""
    sampling = common.Sampling(common.BACKGROUND_SAMPLING)
    return "/generate", request_for(prompt, 1, sampling, max_tokens, False)
