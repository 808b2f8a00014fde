#include "planner/capabilities.h"

#include <algorithm>

#include "planner/axes.h"
#include "planner/diagnostics.h"

namespace orch::planner {
namespace {

// Cache types whose V half needs flash attention in llama.cpp (ggml quantized types).
bool IsQuantizedCacheType(std::string_view type) {
  return type != "f32" && type != "f16" && type != "bf16";
}

std::string_view VHalf(std::string_view kv) {
  std::size_t slash = kv.find('/');
  return slash == std::string_view::npos ? kv : kv.substr(slash + 1);
}

std::string Text(const Coordinate& c, const std::string& axis) {
  auto it = c.find(axis);
  return it == c.end() ? "" : it->second.ToText();
}

std::vector<CapabilityProblem> LlamaCppCombinations(const Coordinate& c) {
  std::vector<CapabilityProblem> problems;
  std::string kv = Text(c, "kv");
  std::string attention = Text(c, "attention");
  if (IsQuantizedCacheType(VHalf(kv)) && attention == "off") {
    problems.push_back(
        {{"kv", "attention"},
         "kv = " + Quote(kv) + " quantizes the V cache, which llama.cpp supports only with "
         "flash attention, but attention = \"off\"; use attention = \"on\" for this cell, "
         "or keep the V half unquantized (e.g. kv = \"" +
             std::string(kv.substr(0, kv.find('/'))) + "/f16\")"});
  }
  auto tp = c.find("tp");
  bool on_cpu = Text(c, "hardware").starts_with("cpu");
  if (tp != c.end() && tp->second.is_int() && tp->second.as_int() > 1 && on_cpu) {
    problems.push_back({{"tp", "hardware"},
                        "tp = " + tp->second.ToText() + " splits the model over devices, "
                        "which llama.cpp cannot do on hardware = " +
                            Quote(Text(c, "hardware")) +
                            "; use tp = 1 on CPU, or a \"gpu:...\" hardware class"});
  }
  return problems;
}

const std::vector<std::string_view> kGgmlCacheTypes = {
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};

// `restricted` axes with their accepted values, plus `open` axes that take any value.
std::vector<AxisSupport> Axes(std::vector<AxisSupport> restricted,
                              std::initializer_list<std::string_view> open) {
  for (std::string_view axis : open) restricted.push_back({axis, {}});
  return restricted;
}

const std::vector<EngineCapabilities>& Tables() {
  static const std::vector<EngineCapabilities> kTables = {
      {"llama.cpp",
       Axes({{"quant", {"f32",    "f16",    "bf16",   "q8_0",   "q6_k",   "q5_k_m",
                        "q5_k_s", "q5_0",   "q5_1",   "q4_k_m", "q4_k_s", "q4_0",
                        "q4_1",   "q3_k_l", "q3_k_m", "q3_k_s", "q2_k",   "iq4_nl",
                        "iq4_xs", "tq1_0",  "tq2_0"}},
             {"kv", kGgmlCacheTypes},
             {"attention", {"off", "on", "auto"}},
             {"cpu_backend",
              {"best", "x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell",
               "alderlake", "skylakex", "cannonlake", "cascadelake", "cooperlake", "icelake",
               "zen4", "sapphirerapids"}}},
            {"engine", "tp", "hardware", "threads", "batch", "ubatch", "ctx", "repack",
             "chat_template", "sampler.seed", "sampler.temperature", "sampler.top_k",
             "sampler.top_p", "sampler.min_p", "sampler.repeat_penalty", "sampler.order"}),
       &LlamaCppCombinations},
      {"vllm",
       Axes({{"quant", {"bf16", "fp16", "fp32", "fp8", "w8a16", "w8a8", "w4a16", "nvfp4",
                        "mxfp4", "awq", "gptq", "bitsandbytes", "gguf"}},
             // int8/int4 are the KV dtypes of the forum study's patched build.
             {"kv", {"auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4"}},
             {"attention", {"auto", "triton", "flash_attn", "flash_attn_2", "flash_attn_3",
                            "flashinfer", "xformers", "torch_sdpa", "flex_attention"}}},
            {"engine", "tp", "hardware", "ctx", "chat_template", "sampler.seed",
             "sampler.temperature", "sampler.top_k", "sampler.top_p", "sampler.min_p",
             "sampler.repeat_penalty"}),
       nullptr},
  };
  return kTables;
}

const AxisSupport* FindSupport(const EngineCapabilities& engine, std::string_view axis) {
  for (const AxisSupport& s : engine.axes) {
    if (s.axis == axis) return &s;
  }
  return nullptr;
}

bool Accepts(const AxisSupport& support, std::string_view value) {
  if (support.values.empty()) return true;
  return std::find(support.values.begin(), support.values.end(), value) !=
         support.values.end();
}

std::string List(const std::vector<std::string_view>& values) {
  std::string out;
  for (std::string_view v : values) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

void CheckValue(const EngineCapabilities& engine, const AxisSupport& support,
                const AxisValue& value, std::vector<CapabilityProblem>& problems) {
  if (!value.is_string()) return;
  std::string_view text = value.as_string();
  bool ok = support.axis == "kv"
                ? Accepts(support, text.substr(0, text.find('/'))) && Accepts(support, VHalf(text))
                : Accepts(support, text);
  if (ok) return;
  problems.push_back({{std::string(support.axis)},
                      std::string(engine.family) + " does not support " +
                          std::string(support.axis) + " = " + Quote(value) + "; expected one of " +
                          List(support.values)});
}

}  // namespace

std::string_view EngineFamily(std::string_view engine) {
  return engine.substr(0, engine.find('@'));
}

const EngineCapabilities* FindEngineCapabilities(std::string_view family) {
  for (const EngineCapabilities& table : Tables()) {
    if (table.family == family) return &table;
  }
  return nullptr;
}

std::vector<CapabilityProblem> CheckCoordinate(const EngineCapabilities& engine,
                                               const Coordinate& coordinate) {
  std::vector<CapabilityProblem> problems;
  for (const auto& [axis, value] : coordinate) {
    if (axis.starts_with(kKnobPrefix)) continue;
    const AxisSupport* support = FindSupport(engine, axis);
    if (support == nullptr) {
      problems.push_back({{axis}, std::string(engine.family) + " has no axis " + Quote(axis) +
                                      "; remove it for this engine, or pass it as knob." +
                                      axis + " if the driver understands it"});
      continue;
    }
    CheckValue(engine, *support, value, problems);
  }
  if (engine.check_combination != nullptr) {
    for (CapabilityProblem& p : engine.check_combination(coordinate)) {
      problems.push_back(std::move(p));
    }
  }
  return problems;
}

}  // namespace orch::planner
