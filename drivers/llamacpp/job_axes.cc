#include "drivers/llamacpp/job_axes.h"

#include <algorithm>
#include <charconv>

#include "base/strings.h"

namespace orch::drivers::llamacpp {
namespace {

using enum AxisKind;

constexpr std::int64_t kCountMax = 1 << 24;

// ggml's quantized cache types: the V half of these needs flash attention.
const std::vector<std::string_view> kQuantizedCacheTypes = {"q8_0", "q4_0", "q4_1",
                                                            "q5_0", "q5_1", "iq4_nl"};

std::vector<std::string_view> CacheTypes() {
  std::vector<std::string_view> types = {"f32", "f16", "bf16"};
  types.insert(types.end(), kQuantizedCacheTypes.begin(), kQuantizedCacheTypes.end());
  return types;
}

JobAxis Count(std::string_view name, std::int64_t min, std::string_view sets) {
  return {
      .name = name, .kind = kInteger, .noun = "count", .min = min, .max = kCountMax, .sets = sets};
}

JobAxis Real(std::string_view name, std::string_view sets) {
  return {.name = name, .kind = kNumber, .noun = "number", .sets = sets};
}

JobAxis Text(std::string_view name, std::string_view sets) {
  return {.name = name, .kind = kString, .noun = "value", .sets = sets};
}

// What the engine runs and how: the model's weights, its cache, kernels and threads.
std::vector<JobAxis> EngineAxes() {
  return {
      Text("engine", "none: the engine build is the driver itself"),
      {.name = "quant",
       .noun = "weight type",
       .values = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k",
                  "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k",
                  "iq4_xs"},
       .sets = "weight type of the model file run (quantized by the driver if needed)"},
      {.name = "kv",
       .noun = "cache type",
       .values = CacheTypes(),
       .pair = true,
       .sets = "type_k / type_v"},
      {.name = "attention",
       .noun = "attention mode",
       .values = {"off", "on", "auto"},
       .aliases = {{"false", "off"}, {"true", "on"}, {"flash", "on"}},
       .sets = "flash_attn_type"},
      Count("tp", 1, "devices the layers are split over (LLAMA_SPLIT_MODE_LAYER)"),
      Text("hardware", "cpu: no offload; gpu...: every layer offloaded"),
      {.name = "cpu_backend",
       .noun = "CPU variant",
       .chars = "abcdefghijklmnopqrstuvwxyz0123456789_",
       .sets = "best, or the CPU kernel variant file libggml-cpu-NAME.so"},
      {.name = "repack", .kind = kBoolean, .noun = "switch", .sets = "use_extra_bufts"},
      Count("threads", 0, "n_threads, n_threads_batch (0 = all hardware threads)"),
      Count("batch", 0, "n_batch (0 = the whole workload)"),
      Count("ubatch", 0, "n_ubatch (0 = the engine's default)"),
      Count("ctx", 0, "n_ctx (0 = the workload's tokens rounded up to 256)"),
      Text("chat_template", "none: accepted and not applied by this driver"),
      // Declared so that cross-engine specs whose baseline sets a dtype (the torch
      // driver's axis) can have llama.cpp cells; nothing to set.
      {.name = "dtype",
       .noun = "compute dtype",
       .values = {"float32"},
       .sets = "none: llama.cpp keeps activations in float32 (weights keep their type)"},
      // Declared so that specs whose baseline is a server (llama-server's slots, -np) can
      // have in-process cells: this driver decodes one sequence.
      {.name = "slots",
       .kind = kInteger,
       .noun = "count",
       .min = 1,
       .max = 1,
       .sets = "none: the in-process engine decodes one sequence at a time"},
      {.name = "load.concurrency",
       .kind = kInteger,
       .noun = "count",
       .min = 1,
       .max = 1,
       .sets = "none: the in-process engine runs this job alone"},
  };
}

// The sampler chain of the generation workloads.
std::vector<JobAxis> SamplerAxes() {
  return {
      {.name = "sampler.seed",
       .kind = kInteger,
       .noun = "seed",
       .min = 0,
       .max = 0xffffffffll,
       .sets = "llama_sampler_init_dist seed (uint32)"},
      Real("sampler.temperature", "temperature sampler (0 = greedy)"),
      {.name = "sampler.top_k",
       .kind = kInteger,
       .noun = "count",
       .min = -1,
       .max = 1 << 30,
       .sets = "top_k sampler"},
      Real("sampler.top_p", "top_p sampler"),
      Real("sampler.min_p", "min_p sampler"),
      Real("sampler.repeat_penalty", "penalties sampler"),
      {.name = "sampler.repeat_last_n",
       .kind = kInteger,
       .noun = "count",
       .min = -1,
       .max = 1 << 30,
       .sets = "penalties sampler window"},
      {.name = "sampler.order",
       .noun = "sampler",
       .values = {"penalties", "top_k", "top_p", "min_p", "temperature"},
       .list = true,
       .sets = "sampler chain order before the seeded draw"},
  };
}

std::vector<JobAxis> MakeAxes() {
  std::vector<JobAxis> axes = EngineAxes();
  std::vector<JobAxis> sampler = SamplerAxes();
  axes.insert(axes.end(), sampler.begin(), sampler.end());
  return axes;
}

std::vector<CombinationRule> MakeRules() {
  return {
      {{.axis = "kv", .part = "v", .in = kQuantizedCacheTypes},
       {.axis = "attention", .in = {"on"}},
       "llama.cpp supports a quantized V cache only with flash attention; a K/V pair "
       "with an unquantized V half (e.g. \"q8_0/f16\") runs without it"},
      {{.axis = "tp", .min = 2},
       {.axis = "hardware", .prefix = "gpu"},
       "llama.cpp splits layers only across GPUs; use tp = 1 on CPU"},
  };
}

std::string_view Part(std::string_view value, std::string_view part) {
  std::size_t slash = value.find('/');
  if (part == "k") return value.substr(0, slash);
  if (part == "v") return slash == std::string_view::npos ? value : value.substr(slash + 1);
  return value;
}

bool AtLeast(std::string_view text, std::int64_t min) {
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value >= min;
}

std::string Subject(const Condition& c) {
  if (c.part.empty()) return std::string(c.axis);
  return "the " + std::string(c.part == "k" ? "K" : "V") + " half of " + std::string(c.axis);
}

std::string Join(const std::vector<std::string_view>& values) {
  std::string out;
  for (std::string_view v : values) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

bool Listed(const std::vector<std::string_view>& values, std::string_view value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string Field(const JobAxis& axis) { return "coordinate." + std::string(axis.name); }

// One enumerated value (after aliases), or an error naming `whole`.
Result<std::string> Enumerated(const JobAxis& axis, std::string value, std::string_view whole) {
  for (const auto& [alias, meaning] : axis.aliases)
    if (value == alias) value = std::string(meaning);
  if (axis.values.empty() || Listed(axis.values, value)) return value;
  std::string expected = axis.pair   ? "T or K/V with T one of "
                         : axis.list ? "a comma list of "
                                     : "one of ";
  std::string in = value == whole ? "" : " in \"" + std::string(whole) + "\"";
  return InvalidArgument(Field(axis) + ": unknown " + std::string(axis.noun) + " \"" + value +
                         "\"" + in + " (expected " + expected + Join(axis.values) + ")");
}

// Splits at `separator` and checks every piece; returns the pieces rejoined.
Result<std::string> Pieces(const JobAxis& axis, const std::string& value, char separator) {
  std::string out;
  std::size_t begin = 0;
  while (begin <= value.size()) {
    std::size_t end = std::min(value.find(separator, begin), value.size());
    ORCH_ASSIGN_OR_RETURN(std::string piece,
                          Enumerated(axis, value.substr(begin, end - begin), value));
    out += (out.empty() ? "" : std::string(1, separator)) + piece;
    begin = end + 1;
  }
  return out;
}

Result<std::string> ReadString(const JobAxis& axis, std::string_view text) {
  std::string value = Lower(text);
  if (axis.pair) {
    ORCH_ASSIGN_OR_RETURN(std::string halves, Pieces(axis, value, '/'));
    if (halves.find('/') == std::string::npos) return halves + "/" + halves;
    if (halves.find('/') != halves.rfind('/'))
      return InvalidArgument(Field(axis) + ": expected T or K/V, got \"" + value + "\"");
    return halves;
  }
  if (axis.list) return Pieces(axis, value, ',');
  if (!axis.chars.empty() &&
      (value.empty() || value.find_first_not_of(axis.chars) != std::string::npos)) {
    return InvalidArgument(Field(axis) + ": invalid " + std::string(axis.noun) + " \"" +
                           std::string(text) + "\" (expected characters from " +
                           std::string(axis.chars) + ")");
  }
  return Enumerated(axis, value, value);
}

Result<AxisReading> ReadInteger(const JobAxis& axis, std::string_view text) {
  AxisReading reading{std::string(text)};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), reading.integer);
  if (error != std::errc() || end != text.data() + text.size() || reading.integer < axis.min ||
      reading.integer > axis.max) {
    return InvalidArgument(Field(axis) + ": expected an integer in [" + std::to_string(axis.min) +
                           ", " + std::to_string(axis.max) + "], got \"" + std::string(text) +
                           "\"");
  }
  return reading;
}

Result<AxisReading> ReadNumber(const JobAxis& axis, std::string_view text) {
  AxisReading reading{std::string(text)};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), reading.number);
  if (error != std::errc() || end != text.data() + text.size() ||
      reading.number != reading.number) {
    return InvalidArgument(Field(axis) + ": expected a number, got \"" + std::string(text) + "\"");
  }
  return reading;
}

Result<AxisReading> ReadSwitch(const JobAxis& axis, std::string_view text) {
  std::string value = Lower(text);
  if (value == "on" || value == "true" || value == "1") return AxisReading{"on", 1};
  if (value == "off" || value == "false" || value == "0") return AxisReading{"off", 0};
  return InvalidArgument(Field(axis) + ": expected on or off, got \"" + std::string(text) + "\"");
}

}  // namespace

Result<AxisReading> ReadAxisValue(const JobAxis& axis, std::string_view text) {
  switch (axis.kind) {
    case kInteger:
      return ReadInteger(axis, text);
    case kNumber:
      return ReadNumber(axis, text);
    case kBoolean:
      return ReadSwitch(axis, text);
    case kString:
      break;
  }
  ORCH_ASSIGN_OR_RETURN(std::string value, ReadString(axis, text));
  return AxisReading{std::move(value)};
}

const std::vector<JobAxis>& JobAxes() {
  static const std::vector<JobAxis> kAxes = MakeAxes();
  return kAxes;
}

const JobAxis* FindJobAxis(std::string_view name) {
  for (const JobAxis& axis : JobAxes())
    if (axis.name == name) return &axis;
  return nullptr;
}

const std::vector<CombinationRule>& CombinationRules() {
  static const std::vector<CombinationRule> kRules = MakeRules();
  return kRules;
}

bool Holds(const Condition& condition, std::string_view value) {
  std::string_view part = Part(value, condition.part);
  if (!condition.in.empty() &&
      std::find(condition.in.begin(), condition.in.end(), part) == condition.in.end())
    return false;
  if (!part.starts_with(condition.prefix)) return false;
  return !condition.min || AtLeast(part, *condition.min);
}

std::string DescribeCondition(const Condition& condition) {
  std::vector<std::string> tests;
  std::string subject = Subject(condition);
  if (condition.in.size() == 1) {
    tests.push_back(subject + " = \"" + std::string(condition.in[0]) + "\"");
  } else if (!condition.in.empty()) {
    tests.push_back(subject + " one of " + Join(condition.in));
  }
  if (!condition.prefix.empty())
    tests.push_back(subject + " = \"" + std::string(condition.prefix) + "...\"");
  if (condition.min) tests.push_back(subject + " >= " + std::to_string(*condition.min));
  std::string out;
  for (const std::string& t : tests) out += (out.empty() ? "" : " and ") + t;
  return out;
}

}  // namespace orch::drivers::llamacpp
