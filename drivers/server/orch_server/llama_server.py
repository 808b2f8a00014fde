"""llama.cpp's llama-server (tools/server, README of the release):

- self-report: GET /props (build_info "bN-HASH", total_slots, model_path,
  default_generation_settings.n_ctx), GET /slots (per-slot settings; off with
  --no-slots);
- no prompt log-probabilities (echo is refused), so teacher forcing is one
  POST /completion per position: the token-id prefix tokens[0..j], n_predict 1,
  n_probs K, cache_prompt true (the server then evaluates about one token per
  request: the decode path, recorded as capture_path "decode-per-position");
  n_probs are the softmax of the raw logits over the whole vocabulary,
  returned as log-probabilities (`post_sampling_probs` false);
- generation: POST /completion with n_predict, n_probs, return_tokens and
  every sampler field explicit (the server's defaults are temperature 0.8,
  top_k 40, top_p 0.95, min_p 0.05: never relied upon).
"""

import math
import re

from orch_driver import axes
from orch_driver.axes import Axis, Condition, Rule
from orch_driver.errors import EngineError
from orch_server import common, rows

FAMILY = "llama-server"
DRIVER = "orch-driver-llama-server"

WEIGHT_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl",
                "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m",
                "q6_k", "iq4_xs")
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
QUANTIZED_CACHE = CACHE_TYPES[3:]
SAMPLERS = ("penalties", "top_k", "top_p", "min_p", "temperature")
L = common.LAUNCH

AXES = [
    axes.text("engine", "none: the server's release is checked against the label"),
    Axis("quant", values=WEIGHT_TYPES, noun="weight type",
         sets=L + "-m, the weight type of the model file the server loaded"),
    Axis("kv", values=CACHE_TYPES, pair=True, noun="cache type", sets=L + "-ctk / -ctv"),
    Axis("attention", values=("off", "on", "auto"), noun="flash attention mode",
         sets=L + "-fa on|off|auto"),
    axes.count("tp", 1, L + "GPUs the layers are split over (-sm layer)"),
    axes.text("hardware", L + "cpu: -ngl 0 --device none; gpu...: -ngl 999 (layers offloaded)"),
    axes.count("threads", 0, L + "-t"),
    axes.count("batch", 0, L + "-b"),
    axes.count("ubatch", 0, L + "-ub"),
    axes.count("ctx", 0, L + "-c; checked against /props n_ctx"),
    common.slots_axis("-np (checked against /props total_slots)"),
    common.switch("repack", "--no-repack when off"),
    axes.text("chat_template", "none: workloads are sent as raw prompts"),
] + common.LOAD_AXES + common.SAMPLER_AXES + [
    Axis("sampler.repeat_last_n", axes.INTEGER, "count", min=-1, max=1 << 30,
         sets="request repeat_last_n"),
    Axis("sampler.order", values=SAMPLERS, list=True, noun="sampler",
         sets="request samplers (the chain before the seeded draw)"),
]

RULES = [
    Rule(Condition("kv", part="v", in_=QUANTIZED_CACHE), Condition("attention", in_=("on",)),
         "llama.cpp supports a quantized V cache only with flash attention"),
    Rule(Condition("tp", min=2), Condition("hardware", prefix="gpu"),
         "llama.cpp splits layers only across GPUs; use tp = 1 on CPU"),
]

CAPTURE_PATHS = {"teacher_forced": "decode-per-position", "generate": "generate"}

# llama-model.cpp, once per weight buffer after loading: "load_tensors: %12s model buffer
# size = %8.2f MiB"; the name is the buffer type's: CPU, CPU_Mapped, CPU_REPACK and
# CUDA_Host (pinned host memory) are in host memory, CUDA0, Vulkan0, ... on a device.
_BUFFER_LINE = re.compile(r"load_tensors:\s+(\S+) model buffer size =\s*([0-9.]+) MiB")


def effective_from_log(text):
    """Where a launched server's log says the weights went: {"hardware": "gpu" when a
    device buffer holds any, else "cpu", "hardware_line": those lines}; {} when the log
    has no buffer line (yet). -ngl asks; what loaded is what counts (a build without a
    GPU backend, or one that found no GPU, loads everything on the CPU)."""
    lines, on_device = [], False
    for line in text.splitlines():
        m = _BUFFER_LINE.search(line)
        if m:
            lines.append(line.strip())
            name = m.group(1)
            if not name.startswith("CPU") and not name.endswith("_Host") and float(m.group(2)) > 0:
                on_device = True
    if not lines:
        return {}
    return {"hardware": "gpu" if on_device else "cpu", "hardware_line": "; ".join(lines)[-300:]}


def same_hardware(requested, effective):
    """gpu... asks for weights on a device; cpu for none there."""
    return requested.startswith("gpu") == (effective == "gpu")


LOG_CHECKS = {"hardware": same_hardware}


def version_of(build_info):
    """"b8390-6c2e1a0" -> "b8390"; None when it is not a release build."""
    match = re.match(r"^(b\d+)(?:-|$)", build_info or "")
    return match.group(1) if match else None


def self_report(client):
    props = client.get("/props")
    if not isinstance(props, dict):
        raise common.malformed(client.url("/props"), "expected an object, got %s"
                               % common.short(props))
    build_info = props.get("build_info", "")
    version = version_of(build_info if isinstance(build_info, str) else "")
    if version is None:
        raise EngineError('%s: build_info "%s" is not a llama.cpp release build ("bN-HASH"); '
                          "this driver knows llama-server releases by that number"
                          % (client.url("/props"), build_info))
    settings = props.get("default_generation_settings")
    settings = settings if isinstance(settings, dict) else {}
    reported = {"total_slots": props.get("total_slots"), "n_ctx": settings.get("n_ctx"),
                "model_path": props.get("model_path"), "build_info": build_info}
    for key in ("flash_attn", "flash_attn_type", "n_batch", "n_ubatch", "n_threads"):
        if key in props:
            reported[key] = props[key]
    try:
        slots = client.get("/slots")
        reported["slots"] = slots if isinstance(slots, list) else None
    except EngineError as error:  # --no-slots: not an error of the job
        reported["slots"] = "unavailable (%s)" % error.message
    return {"version": version, "build": {"build_info": build_info},
            "kernel_path": "unreported (llama-server does not report its kernels)",
            "reported": reported, "model": props.get("model_path", "")}


def _flash_text(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    return {"enabled": "on", "disabled": "off"}.get(str(value).lower(), str(value).lower())


def check(job, report, url):
    r = report["reported"]
    common.check_axis(job, "slots", r.get("total_slots"), url, "/props total_slots")
    common.check_axis(job, "ctx", r.get("n_ctx"), url, "/props default_generation_settings.n_ctx")
    flash = r.get("flash_attn_type", r.get("flash_attn"))
    if flash is not None:
        common.check_axis(job, "attention", _flash_text(flash), url, "/props flash attention")


def _sampler_fields(sampling, order):
    return {"temperature": sampling.temperature, "top_k": sampling.top_k_or_off(0),
            "top_p": sampling.top_p, "min_p": sampling.min_p, "typical_p": 1.0,
            "repeat_penalty": sampling.repeat_penalty, "repeat_last_n": sampling.repeat_last_n,
            "presence_penalty": 0.0, "frequency_penalty": 0.0, "dry_multiplier": 0.0,
            "xtc_probability": 0.0, "top_n_sigma": -1.0, "mirostat": 0,
            "dynatemp_range": 0.0, "seed": sampling.seed, "samplers": list(order),
            "ignore_eos": False, "n_keep": 0, "logit_bias": [],
            "post_sampling_probs": False, "stream": False, "return_tokens": True}


def request_for(prompt, k, sampling, order=SAMPLERS, n_predict=1, cache_prompt=True):
    """The /completion body: `prompt` token ids (or text), every sampler field."""
    body = {"prompt": prompt, "n_predict": n_predict, "n_probs": k,
            "cache_prompt": cache_prompt}
    body.update(_sampler_fields(sampling, order))
    return body


def _pairs(entries, url, where):
    if not isinstance(entries, list):
        raise common.malformed(url, "%s: expected an array, got %s" % (where, common.short(entries)))
    out = []
    for i, entry in enumerate(entries):
        at = "%s[%d]" % (where, i)
        if not isinstance(entry, dict):
            raise common.malformed(url, "%s: expected an object" % at)
        out.append((common.token_id(entry.get("id"), url, at + ".id"),
                    common.number(entry.get("logprob"), url, at + ".logprob")))
    return out


def parse_response(doc, k, url, position, input_token, target_id, teacher_forced=True):
    """Rows of one /completion answer: under teacher forcing the one row of
    `position` (target `target_id`, its log-probability NaN when outside the
    top k); in generation one row per generated token from `position` on."""
    probs = common.need(doc, "completion_probabilities", list, url, "answer")
    if teacher_forced and not probs:
        raise common.malformed(url, "completion_probabilities is empty at position %d" % position)
    out = []
    previous = input_token
    for step, entry in enumerate(probs[:1] if teacher_forced else probs):
        where = "completion_probabilities[%d]" % step
        if not isinstance(entry, dict):
            raise common.malformed(url, where + ": expected an object")
        pairs = _pairs(entry.get("top_logprobs"), url, where + ".top_logprobs")
        common.check_count(pairs, k, url, position + step)
        pairs = pairs[:k]
        if teacher_forced:
            found = [lp for i, lp in pairs if i == target_id]
            out.append(rows.row(position, pairs, target_id,
                                found[0] if found else math.nan,
                                input_token, -1))
        else:
            chosen = common.token_id(entry.get("id"), url, where + ".id")
            out.append(rows.row(position + step, pairs, input_token=previous, output_token=chosen))
            previous = chosen
    return out


def tokenize(client, text):
    doc = client.post("/tokenize", {"content": text, "add_special": True})
    tokens = common.need(doc, "tokens", list, client.url("/tokenize"), "answer")
    return [common.token_id(t, client.url("/tokenize"), "tokens") for t in tokens]


def _order(job):
    order = job.settings.get("sampler.order")
    return order.split(",") if order else SAMPLERS


def teacher_force(client, job, tokens, k, emit):
    """One request per position, each answer parsed, digested and written
    while the next request is on the wire (Client.post_each); the server
    still sees one request at a time, as from a plain loop."""
    sampling = common.Sampling(job.settings)
    order = _order(job)
    url = client.url("/completion")
    evaluated = []

    def take(j, doc):
        target = tokens[j + 1] if j + 1 < len(tokens) else rows.NO_TARGET
        emit(parse_response(doc, k, url, j, tokens[j], target))
        timings = doc.get("timings") if isinstance(doc, dict) else None
        if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
            evaluated.append(timings["prompt_n"])

    client.post_each("/completion", (request_for(tokens[:j + 1], k, sampling, order)
                                     for j in range(len(tokens))), take)
    out = {"capture_path": CAPTURE_PATHS["teacher_forced"]}
    if evaluated:
        out["prompt_tokens_evaluated"] = {"max": max(evaluated), "total": sum(evaluated),
                                          "requests": len(evaluated)}
    return out


def generate(client, job, k, emit):
    w = job.workload
    sampling = common.Sampling(job.settings)
    prompt = tokenize(client, w.prompt)
    if not prompt:
        raise EngineError("%s: the prompt tokenized to no tokens" % client.url("/tokenize"))
    doc = client.post("/completion", request_for(prompt, k, sampling, _order(job),
                                                 n_predict=w.max_tokens, cache_prompt=False))
    url = client.url("/completion")
    produced = parse_response(doc, k, url, 0, prompt[-1], rows.NO_TARGET, teacher_forced=False)
    generated = [r.output_token for r in produced]
    tokens = doc.get("tokens")
    if isinstance(tokens, list) and tokens != generated:
        raise common.malformed(url, "tokens %s are not the ids of completion_probabilities %s"
                               % (common.short(tokens), common.short(generated)))
    emit(produced)
    content = doc.get("content", "")
    return {"capture_path": CAPTURE_PATHS["generate"], "generated_ids": generated,
            "generated_text": content if isinstance(content, str) else "",
            "stop": doc.get("stop_type", ""), "generated_tokens": len(generated),
            "max_tokens": w.max_tokens}


def background_request(prompt, max_tokens, job, model):
    """One background generation of load.concurrency (orch_server/load.py)."""
    sampling = common.Sampling(common.BACKGROUND_SAMPLING)
    return "/completion", request_for(prompt, 1, sampling, n_predict=max_tokens,
                                      cache_prompt=False)


def busy(client):
    """The slots /slots reports processing (None without /slots)."""
    slots = client.get("/slots")
    if not isinstance(slots, list):
        return None
    return sum(1 for s in slots if isinstance(s, dict) and s.get("is_processing") is True)
