#include "planner/axes.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "base/strings.h"
#include "base/suggest.h"
#include "planner/diagnostics.h"

namespace orch::planner {
namespace {

using enum AxisType;
constexpr AxisScope kAll = AxisScope::kAllWorkloads;
constexpr AxisScope kGen = AxisScope::kGenerateOnly;

// name, type, scope, standard, lowercase, min, max, help
constexpr std::array kAxes = {
    AxisDef{"engine", kString, kAll, true, true, 0, 0,
            "engine and build, e.g. \"llama.cpp@b8390\", \"vllm@0.11.0\""},
    AxisDef{"quant", kString, kAll, true, true, 0, 0,
            "weight quantization, e.g. \"q4_0\", \"bf16\", \"fp8\""},
    AxisDef{"kv", kString, kAll, true, true, 0, 0,
            "KV-cache dtype, one value or \"K/V\", e.g. \"f16\", \"q8_0/f16\""},
    AxisDef{"attention", kString, kAll, true, true, 0, 0,
            "attention kernel: \"off\"/\"on\"/\"auto\" (flash attention) or a backend name"},
    AxisDef{"tp", kInt, kAll, true, false, 1, 1024, "tensor-parallel degree (>= 1)"},
    AxisDef{"hardware", kString, kAll, true, true, 0, 0,
            "hardware class: \"cpu\", \"cpu:<isa>\", \"gpu\", \"gpu:<model>\""},
    AxisDef{"threads", kInt, kAll, false, false, 1, 4096, "CPU threads"},
    AxisDef{"batch", kInt, kAll, false, false, 1, 1 << 24, "logical batch size"},
    AxisDef{"ubatch", kInt, kAll, false, false, 1, 1 << 24, "physical (micro) batch size"},
    AxisDef{"ctx", kInt, kAll, false, false, 1, 1 << 24, "context size in tokens"},
    AxisDef{"cpu_backend", kString, kAll, false, true, 0, 0,
            "CPU kernel variant, e.g. \"haswell\", or \"best\""},
    AxisDef{"repack", kBool, kAll, false, false, 0, 0,
            "repacked weight layouts (llama.cpp use_extra_bufts)"},
    AxisDef{"chat_template", kString, kAll, false, false, 0, 0, "chat template name"},
    AxisDef{"impl", kString, kAll, false, true, 0, 0,
            "model implementation inside the engine, e.g. \"orch\", \"transformers\""},
    AxisDef{"dtype", kString, kAll, false, true, 0, 0,
            "compute dtype, e.g. \"float32\", \"bfloat16\", \"float16\""},
    AxisDef{"attention_block", kInt, kAll, false, false, 1, 1 << 24,
            "key block size of a blocked (online-softmax) attention"},
    AxisDef{"matmul_tf32", kBool, kAll, false, false, 0, 0, "TF32 matmuls (CUDA)"},
    AxisDef{"deterministic", kBool, kAll, false, false, 0, 0,
            "deterministic algorithms only (torch.use_deterministic_algorithms)"},
    AxisDef{"slots", kInt, kAll, false, false, 1, 1 << 24,
            "requests a server runs at once (llama-server -np, vLLM --max-num-seqs)"},
    AxisDef{"batch_invariant", kBool, kAll, false, false, 0, 0,
            "batch-invariant kernels of a server (VLLM_BATCH_INVARIANT, SGLang deterministic)"},
    AxisDef{"prefix_cache", kBool, kAll, false, false, 0, 0,
            "a server's prefix cache (vLLM prefix caching, SGLang radix cache)"},
    AxisDef{"load.concurrency", kInt, kAll, false, false, 1, 4096,
            "requests in flight on the server while the measured one runs (1 = it alone)"},
    AxisDef{"load.seed", kInt, kAll, false, false, 0, 4294967295.0,
            "seed of the background requests' prompt mix (default: from the job id)"},
    AxisDef{"head_dtype", kString, kAll, false, true, 0, 0,
            "dtype of the LM head's logits, e.g. \"auto\" (the model's), \"float32\""},
    AxisDef{"sampler.seed", kInt, kGen, false, false, 0, 18446744073709551615.0, "sampler seed"},
    AxisDef{"sampler.temperature", kFloat, kGen, false, false, 0, 100,
            "sampling temperature (0 = greedy)"},
    AxisDef{"sampler.top_k", kInt, kGen, false, false, 0, 1 << 24, "top-k (0 = off)"},
    AxisDef{"sampler.top_p", kFloat, kGen, false, false, 0, 1, "top-p"},
    AxisDef{"sampler.min_p", kFloat, kGen, false, false, 0, 1, "min-p"},
    AxisDef{"sampler.repeat_penalty", kFloat, kGen, false, false, 0, 100,
            "repeat penalty (1 = off)"},
    AxisDef{"sampler.repeat_last_n", kInt, kGen, false, false, -1, 1 << 24,
            "tokens the repeat penalty looks back over (0 = none, -1 = the context)"},
    AxisDef{"sampler.order", kString, kGen, false, false, 0, 0,
            "sampler chain order, e.g. \"top_k,top_p,min_p,temperature\""},
};

constexpr AxisDef kKnob{"knob.*", kAny, kAll, false,
                        false,    0,    0,    "free engine knob passed to the driver unchecked"};

std::string Describe(const AxisValue& raw) {
  if (raw.is_string()) return "the string " + Quote(raw);
  if (raw.is_int()) return "the integer " + raw.ToText();
  if (raw.is_float()) return "the number " + raw.ToText();
  return "the boolean " + raw.ToText();
}

std::string Range(const AxisDef& axis) {
  bool bounded_above = axis.max < 1e15;
  std::string low = FormatDouble(axis.min);
  if (!bounded_above) return ">= " + low;
  return "in [" + low + ", " + FormatDouble(axis.max) + "]";
}

Result<AxisValue> NormaliseKv(std::string text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) return AxisValue::String(text);
  std::string k = Trim(std::string_view(text).substr(0, slash));
  std::string v = Trim(std::string_view(text).substr(slash + 1));
  if (k.empty() || v.empty() || v.find('/') != std::string::npos) {
    return InvalidArgument("expected one cache type or \"K/V\" (e.g. \"q8_0/f16\"), got " +
                           Quote(text));
  }
  return AxisValue::String(k == v ? k : k + "/" + v);
}

Result<AxisValue> NormaliseHardware(std::string text) {
  std::string_view kind = std::string_view(text).substr(0, text.find(':'));
  bool qualified = text.find(':') != std::string::npos;
  bool ok = (kind == "cpu" || kind == "gpu") && (!qualified || text.size() > 4);
  if (!ok) {
    return InvalidArgument("expected \"cpu\", \"cpu:<isa>\", \"gpu\" or \"gpu:<model>\", got " +
                           Quote(text));
  }
  return AxisValue::String(text);
}

Result<AxisValue> NormaliseString(const AxisDef& axis, const AxisValue& raw) {
  if (axis.name == "attention" && raw.is_bool()) {
    return AxisValue::String(raw.as_bool() ? "on" : "off");
  }
  if (!raw.is_string()) {
    return InvalidArgument("expected a string (" + std::string(axis.help) + "), got " +
                           Describe(raw));
  }
  std::string text = Trim(raw.as_string());
  if (axis.lowercase) text = Lower(text);
  if (text.empty()) return InvalidArgument("expected a non-empty string, got \"\"");
  if (axis.name == "kv") return NormaliseKv(text);
  if (axis.name == "hardware") return NormaliseHardware(text);
  return AxisValue::String(text);
}

Result<AxisValue> NormaliseNumber(const AxisDef& axis, const AxisValue& raw) {
  bool want_int = axis.type == kInt;
  bool type_ok = want_int ? raw.is_int() : (raw.is_int() || raw.is_float());
  if (!type_ok) {
    return InvalidArgument(std::string("expected ") + (want_int ? "an integer" : "a number") + " " +
                           Range(axis) + ", got " + Describe(raw));
  }
  double v = raw.is_int() ? static_cast<double>(raw.as_int()) : raw.as_float();
  if (!(v >= axis.min && v <= axis.max)) {
    return InvalidArgument(std::string(axis.name) + " must be " + Range(axis) + ", got " +
                           raw.ToText());
  }
  return want_int ? raw : AxisValue::Float(v);
}

Result<AxisValue> NormaliseBool(const AxisValue& raw) {
  if (raw.is_bool()) return raw;
  if (raw.is_string()) {
    std::string text = Lower(Trim(raw.as_string()));
    if (text == "on" || text == "true") return AxisValue::Bool(true);
    if (text == "off" || text == "false") return AxisValue::Bool(false);
  }
  return InvalidArgument("expected true/false (or \"on\"/\"off\"), got " + Describe(raw));
}

}  // namespace

const AxisDef* FindAxis(std::string_view name) {
  for (const AxisDef& axis : kAxes) {
    if (axis.name == name) return &axis;
  }
  if (name.size() > kKnobPrefix.size() && name.starts_with(kKnobPrefix)) return &kKnob;
  return nullptr;
}

const std::vector<std::string_view>& StandardAxes() {
  static const std::vector<std::string_view> kStandard = {"engine",    "quant", "kv",
                                                          "attention", "tp",    "hardware"};
  return kStandard;
}

std::vector<std::string_view> KnownAxisNames() {
  std::vector<std::string_view> names;
  for (const AxisDef& axis : kAxes) names.push_back(axis.name);
  return names;
}

std::string SuggestAxis(std::string_view unknown) {
  std::vector<std::string> names;
  for (const AxisDef& axis : kAxes) names.emplace_back(axis.name);
  return ClosestName(unknown, names);
}

Result<AxisValue> NormaliseAxisValue(const AxisDef& axis, const AxisValue& raw) {
  switch (axis.type) {
    case kString:
      return NormaliseString(axis, raw);
    case kInt:
    case kFloat:
      return NormaliseNumber(axis, raw);
    case kBool:
      return NormaliseBool(raw);
    case kAny:
      if (raw.is_string()) return AxisValue::String(Trim(raw.as_string()));
      return raw;
  }
  return raw;
}

}  // namespace orch::planner
