#include "drivers/llamacpp/job_settings.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 9> kCacheTypes = {
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};
constexpr std::array<std::string_view, 6> kQuantizedCacheTypes = {
    "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};
constexpr std::array<std::string_view, 19> kWeightTypes = {
    "f32",    "f16",    "bf16",   "q8_0",   "q4_0",  "q4_1",   "q5_0",
    "q5_1",   "iq4_nl", "q2_k",   "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s",
    "q4_k_m", "q5_k_s", "q5_k_m", "q6_k",   "iq4_xs"};
constexpr std::array<std::string_view, 5> kSamplerNames = {
    "penalties", "top_k", "top_p", "min_p", "temperature"};

template <std::size_t N>
bool Contains(const std::array<std::string_view, N>& list,
              std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string Lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

// Coordinate values are strings; numbers written by hand may be JSON numbers.
std::string AxisText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

Result<std::int64_t> ParseInteger(const std::string& field,
                                  const std::string& text, std::int64_t min,
                                  std::int64_t max) {
  std::int64_t value = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() ||
      value < min || value > max) {
    return InvalidArgument("coordinate." + field + ": expected an integer in [" +
                           std::to_string(min) + ", " + std::to_string(max) +
                           "], got \"" + text + "\"");
  }
  return value;
}

Result<double> ParseReal(const std::string& field, const std::string& text) {
  double value = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() ||
      !(value == value)) {
    return InvalidArgument("coordinate." + field + ": expected a number, got \"" +
                           text + "\"");
  }
  return value;
}

Result<bool> ParseSwitch(const std::string& field, const std::string& text) {
  std::string value = Lower(text);
  if (value == "on" || value == "true" || value == "1") return true;
  if (value == "off" || value == "false" || value == "0") return false;
  return InvalidArgument("coordinate." + field +
                         ": expected on or off, got \"" + text + "\"");
}

Status ParseKv(const std::string& text, JobSettings* settings) {
  std::string value = Lower(text);
  std::size_t slash = value.find('/');
  settings->type_k = value.substr(0, slash);
  settings->type_v = slash == std::string::npos ? value : value.substr(slash + 1);
  for (const std::string& half : {settings->type_k, settings->type_v}) {
    if (!IsKnownCacheType(half)) {
      return InvalidArgument(
          "coordinate.kv: unknown cache type \"" + half + "\" in \"" + text +
          "\" (expected T or K/V with T one of f32, f16, bf16, q8_0, q4_0, "
          "q4_1, q5_0, q5_1, iq4_nl)");
    }
  }
  return Status::Ok();
}

Status ParseAttention(const std::string& text, JobSettings* settings) {
  std::string value = Lower(text);
  if (value == "off" || value == "false") {
    settings->attention = FlashAttention::kOff;
  } else if (value == "on" || value == "true" || value == "flash") {
    settings->attention = FlashAttention::kOn;
  } else if (value == "auto") {
    settings->attention = FlashAttention::kAuto;
  } else {
    return InvalidArgument("coordinate.attention: expected off, on or auto, got \"" +
                           text + "\"");
  }
  return Status::Ok();
}

Status ParseSamplerOrder(const std::string& text, SamplerSettings* sampler) {
  sampler->order.clear();
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string name = Lower(text.substr(begin, end - begin));
    if (!Contains(kSamplerNames, name)) {
      return InvalidArgument(
          "coordinate.sampler.order: unknown sampler \"" + name + "\" in \"" +
          text + "\" (expected a comma list of penalties, top_k, top_p, min_p, "
          "temperature)");
    }
    sampler->order.push_back(name);
    begin = end + 1;
  }
  return Status::Ok();
}

Status ApplySamplerAxis(const std::string& axis, const std::string& text,
                        SamplerSettings* sampler) {
  const std::string field = "sampler." + axis;
  if (axis == "order") return ParseSamplerOrder(text, sampler);
  if (axis == "seed") {
    ORCH_ASSIGN_OR_RETURN(std::int64_t seed,
                          ParseInteger(field, text, 0, 0xffffffffll));
    sampler->seed = static_cast<std::uint32_t>(seed);
    return Status::Ok();
  }
  if (axis == "top_k" || axis == "repeat_last_n") {
    ORCH_ASSIGN_OR_RETURN(std::int64_t value,
                          ParseInteger(field, text, -1, 1 << 30));
    (axis == "top_k" ? sampler->top_k : sampler->repeat_last_n) =
        static_cast<std::int32_t>(value);
    return Status::Ok();
  }
  ORCH_ASSIGN_OR_RETURN(double value, ParseReal(field, text));
  if (axis == "temperature") {
    sampler->temperature = value;
  } else if (axis == "top_p") {
    sampler->top_p = value;
  } else if (axis == "min_p") {
    sampler->min_p = value;
  } else if (axis == "repeat_penalty") {
    sampler->repeat_penalty = value;
  } else {
    return InvalidArgument("coordinate." + field +
                           ": not a sampler setting this driver knows");
  }
  return Status::Ok();
}

Status ApplyCountAxis(const std::string& axis, const std::string& text,
                      JobSettings* settings) {
  std::int64_t min = axis == "tp" ? 1 : 0;
  ORCH_ASSIGN_OR_RETURN(std::int64_t value,
                        ParseInteger(axis, text, min, 1 << 24));
  auto narrow = static_cast<std::int32_t>(value);
  if (axis == "threads") settings->threads = narrow;
  if (axis == "batch") settings->batch = narrow;
  if (axis == "ubatch") settings->ubatch = narrow;
  if (axis == "ctx") settings->ctx = narrow;
  if (axis == "tp") settings->tp = narrow;
  return Status::Ok();
}

// One coordinate axis. Axes the driver does not act on (engine, free knobs,
// chat_template under teacher forcing) are accepted and ignored.
Status ApplyAxis(const std::string& axis, const std::string& text,
                 JobSettings* settings) {
  if (axis == "quant") {
    settings->quant = Lower(text);
    if (!IsKnownWeightType(settings->quant)) {
      return InvalidArgument("coordinate.quant: unknown weight type \"" + text +
                             "\" (expected f32, f16, bf16, q8_0, q4_0, q4_k_m, ...)");
    }
    return Status::Ok();
  }
  if (axis == "kv") return ParseKv(text, settings);
  if (axis == "attention") return ParseAttention(text, settings);
  if (axis == "cpu_backend") {
    settings->cpu_backend = Lower(text);
    bool plain = !settings->cpu_backend.empty() &&
                 std::all_of(settings->cpu_backend.begin(),
                             settings->cpu_backend.end(), [](char c) {
                               return (c >= 'a' && c <= 'z') ||
                                      (c >= '0' && c <= '9') || c == '_';
                             });
    if (!plain) {
      return InvalidArgument("coordinate.cpu_backend: expected \"best\" or a "
                             "variant name like haswell, got \"" + text + "\"");
    }
    return Status::Ok();
  }
  if (axis == "repack") {
    ORCH_ASSIGN_OR_RETURN(settings->repack, ParseSwitch(axis, text));
    return Status::Ok();
  }
  if (axis == "hardware") {
    settings->hardware = Lower(text);
    return Status::Ok();
  }
  if (axis == "threads" || axis == "batch" || axis == "ubatch" ||
      axis == "ctx" || axis == "tp") {
    return ApplyCountAxis(axis, text, settings);
  }
  if (axis.rfind("sampler.", 0) == 0)
    return ApplySamplerAxis(axis.substr(8), text, &settings->sampler);
  return Status::Ok();
}

Result<std::int64_t> IntegerField(const json& object, const std::string& where,
                                  const char* key, std::int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
    return InvalidArgument(where + "." + key +
                           ": expected a non-negative integer, got " +
                           it->dump());
  }
  return it->get<std::int64_t>();
}

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

Status ParseCapture(const json& capture, CaptureSettings* out) {
  if (!capture.is_object()) return Status::Ok();
  ORCH_ASSIGN_OR_RETURN(std::int64_t top_k,
                        IntegerField(capture, "capture", "top_k", 20));
  if (top_k < 1 || top_k > 1024) {
    return InvalidArgument("capture.top_k: expected 1 to 1024, got " +
                           std::to_string(top_k));
  }
  out->top_k = static_cast<std::uint32_t>(top_k);
  ORCH_ASSIGN_OR_RETURN(out->full_every,
                        IntegerField(capture, "capture", "full_every", 0));
  auto windows = capture.find("full_windows");
  if (windows == capture.end() || windows->is_null()) return Status::Ok();
  if (!windows->is_array()) {
    return InvalidArgument("capture.full_windows: expected [[begin, end], ...], got " +
                           windows->dump());
  }
  for (const json& window : *windows) {
    if (!window.is_array() || window.size() != 2 ||
        !window[0].is_number_integer() || !window[1].is_number_integer() ||
        window[0].get<std::int64_t>() < 0 ||
        window[1].get<std::int64_t>() < window[0].get<std::int64_t>()) {
      return InvalidArgument(
          "capture.full_windows: expected [begin, end] with 0 <= begin <= end, got " +
          window.dump());
    }
    out->full_windows.emplace_back(window[0].get<std::int64_t>(),
                                   window[1].get<std::int64_t>());
  }
  return Status::Ok();
}

Status ParseTokens(const json& tokens, WorkloadSettings* out) {
  if (!tokens.is_array()) {
    return InvalidArgument("workload.tokens: expected an array of token ids, got " +
                           tokens.dump().substr(0, 80));
  }
  for (const json& token : tokens) {
    if (!token.is_number_integer() || token.get<std::int64_t>() < 0 ||
        token.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      return InvalidArgument("workload.tokens: not a token id: " + token.dump());
    }
    out->tokens.push_back(static_cast<std::int32_t>(token.get<std::int64_t>()));
  }
  out->has_tokens = true;
  return Status::Ok();
}

Status ParseWorkload(const json& workload, WorkloadSettings* out) {
  if (!workload.is_object()) {
    return InvalidArgument("workload: expected an object, got " +
                           workload.dump().substr(0, 80));
  }
  out->name = StringField(workload, "name");
  std::string kind = StringField(workload, "kind");
  if (kind == "teacher_forced") {
    out->kind = WorkloadSettings::Kind::kTeacherForced;
    ORCH_ASSIGN_OR_RETURN(out->positions,
                          IntegerField(workload, "workload", "positions", 0));
    if (workload.contains("tokens")) return ParseTokens(workload["tokens"], out);
    if (!workload.contains("text") || !workload["text"].is_string()) {
      return InvalidArgument("workload " + out->name +
                             ": teacher_forced needs text or tokens");
    }
    out->text = workload["text"].get<std::string>();
    return Status::Ok();
  }
  if (kind == "generate") {
    out->kind = WorkloadSettings::Kind::kGenerate;
    out->prompt = StringField(workload, "prompt");
    ORCH_ASSIGN_OR_RETURN(out->max_tokens,
                          IntegerField(workload, "workload", "max_tokens", 0));
    if (out->prompt.empty() || out->max_tokens == 0) {
      return InvalidArgument("workload " + out->name +
                             ": generate needs a prompt and max_tokens > 0");
    }
    return Status::Ok();
  }
  return InvalidArgument("workload.kind: expected teacher_forced or generate, got \"" +
                         kind + "\"");
}

// Where the plan tells the file's weight type: a synth recipe's `type=`, or the
// key of the pinned variant whose sha256 is the requirement.
std::string PlannedModelType(const std::string& requirement, const json& spec) {
  if (requirement.rfind("synth:", 0) == 0) {
    std::size_t at = requirement.find("type=");
    if (at == std::string::npos) return "f32";
    std::size_t end = requirement.find(',', at);
    return Lower(requirement.substr(at + 5, end == std::string::npos
                                                ? std::string::npos
                                                : end - at - 5));
  }
  if (!spec.is_object() || !spec.contains("variants") ||
      !spec["variants"].is_object())
    return "";
  for (const auto& [quant, variant] : spec["variants"].items()) {
    if (!variant.is_object()) continue;
    std::string sha = StringField(variant, "sha256");
    if (!sha.empty() && requirement == "sha256:" + sha) return Lower(quant);
  }
  return "";
}

Status ParseModel(const json& model, JobSettings* out) {
  if (!model.is_object()) {
    return InvalidArgument("model: expected an object, got " +
                           model.dump().substr(0, 80));
  }
  out->model_requirement = StringField(model, "requirement");
  out->model_path = StringField(model, "path");
  out->model_sha256 = StringField(model, "sha256");
  out->cache_dir = StringField(model, "cache_dir");
  out->model_type = PlannedModelType(
      out->model_requirement, model.contains("spec") ? model["spec"] : json());
  return Status::Ok();
}

Status CheckCombination(const JobSettings& settings) {
  if (IsQuantizedCacheType(settings.type_v) &&
      settings.attention != FlashAttention::kOn) {
    return Status(StatusCode::kFailedPrecondition,
                  "kv = \"" + settings.type_k + "/" + settings.type_v +
                      "\" quantizes the V cache, which llama.cpp supports only "
                      "with flash attention; set attention = \"on\"");
  }
  if (settings.tp > 1 && !settings.gpu()) {
    return Status(StatusCode::kFailedPrecondition,
                  "tp = " + std::to_string(settings.tp) +
                      " on hardware = \"" + settings.hardware +
                      "\": llama.cpp splits layers only across GPUs");
  }
  return Status::Ok();
}

}  // namespace

bool CaptureSettings::WantsFullRow(std::int64_t position) const {
  if (full_every > 0 && position % full_every == 0) return true;
  for (const auto& [begin, end] : full_windows)
    if (position >= begin && position < end) return true;
  return false;
}

bool IsKnownCacheType(std::string_view type) {
  return Contains(kCacheTypes, type);
}
bool IsQuantizedCacheType(std::string_view type) {
  return Contains(kQuantizedCacheTypes, type);
}
bool IsKnownWeightType(std::string_view type) {
  return Contains(kWeightTypes, type);
}

Result<JobSettings> ParseJob(std::string_view json_text) {
  json job = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!job.is_object())
    return InvalidArgument("job: stdin is not a JSON object");
  JobSettings settings;
  settings.run_id = StringField(job, "run_id");
  settings.job_id = StringField(job, "job_id");
  if (job.contains("requirements") && job["requirements"].is_object())
    settings.engine = StringField(job["requirements"], "engine");
  if (!job.contains("coordinate") || !job["coordinate"].is_object())
    return InvalidArgument("job.coordinate: missing or not an object");
  for (const auto& [axis, value] : job["coordinate"].items())
    ORCH_RETURN_IF_ERROR(ApplyAxis(axis, AxisText(value), &settings));
  ORCH_RETURN_IF_ERROR(
      ParseWorkload(job.value("workload", json()), &settings.workload));
  json capture = job.value("capture", json());
  if (capture.is_null() && job["workload"].is_object())
    capture = job["workload"].value("capture", json());
  ORCH_RETURN_IF_ERROR(ParseCapture(capture, &settings.capture));
  ORCH_RETURN_IF_ERROR(ParseModel(job.value("model", json()), &settings));
  ORCH_RETURN_IF_ERROR(CheckCombination(settings));
  return settings;
}

std::string_view ErrorCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return "invalid_job";
    case StatusCode::kFailedPrecondition:
      return "invalid_combination";
    case StatusCode::kNotFound:
      return "model_missing";
    case StatusCode::kDataLoss:
      return "sha256_mismatch";
    default:
      return "engine_error";
  }
}

}  // namespace orch::drivers::llamacpp
