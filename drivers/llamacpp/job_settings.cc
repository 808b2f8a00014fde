#include "drivers/llamacpp/job_settings.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/strings.h"
#include "drivers/llamacpp/job_axes.h"
#include "plan_document/job_fields.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;

// Coordinate values are strings; numbers written by hand may be JSON numbers.
std::string AxisText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

FlashAttention AttentionOf(const std::string& mode) {
  if (mode == "off") return FlashAttention::kOff;
  return mode == "on" ? FlashAttention::kOn : FlashAttention::kAuto;
}

std::string_view AttentionName(FlashAttention mode) {
  switch (mode) {
    case FlashAttention::kOff:
      return "off";
    case FlashAttention::kOn:
      return "on";
    case FlashAttention::kAuto:
      break;
  }
  return "auto";
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t end = std::min(text.find(',', begin), text.size());
    items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

void AssignSampler(const std::string& axis, const AxisReading& r, SamplerSettings* s) {
  auto narrow = static_cast<std::int32_t>(r.integer);
  if (axis == "order") s->order = SplitList(r.text);
  if (axis == "seed") s->seed = static_cast<std::uint32_t>(r.integer);
  if (axis == "top_k") s->top_k = narrow;
  if (axis == "repeat_last_n") s->repeat_last_n = narrow;
  if (axis == "temperature") s->temperature = r.number;
  if (axis == "top_p") s->top_p = r.number;
  if (axis == "min_p") s->min_p = r.number;
  if (axis == "repeat_penalty") s->repeat_penalty = r.number;
}

// Stores one checked value (job_axes.h) in the setting it controls.
void Assign(const std::string& axis, const AxisReading& r, JobSettings* s) {
  auto narrow = static_cast<std::int32_t>(r.integer);
  std::size_t slash = r.text.find('/');
  if (axis == "quant") s->quant = r.text;
  if (axis == "kv") s->type_k = r.text.substr(0, slash);
  if (axis == "kv") s->type_v = r.text.substr(slash + 1);
  if (axis == "attention") s->attention = AttentionOf(r.text);
  if (axis == "cpu_backend") s->cpu_backend = r.text;
  if (axis == "repack") s->repack = r.integer != 0;
  if (axis == "hardware") s->hardware = r.text;
  if (axis == "threads") s->threads = narrow;
  if (axis == "batch") s->batch = narrow;
  if (axis == "ubatch") s->ubatch = narrow;
  if (axis == "ctx") s->ctx = narrow;
  if (axis == "tp") s->tp = narrow;
  if (axis.rfind("sampler.", 0) == 0) AssignSampler(axis.substr(8), r, &s->sampler);
}

// One coordinate axis. Axes that are no llama.cpp setting (free knobs) are
// accepted and ignored.
Status ApplyAxis(const std::string& axis, const std::string& text, JobSettings* settings) {
  const JobAxis* def = FindJobAxis(axis);
  if (def == nullptr) return Status::Ok();
  ORCH_ASSIGN_OR_RETURN(AxisReading reading, ReadAxisValue(*def, text));
  Assign(axis, reading, settings);
  return Status::Ok();
}

Result<std::int64_t> IntegerField(const json& object, const std::string& where, const char* key,
                                  std::int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
    return InvalidArgument(where + "." + key + ": expected a non-negative integer, got " +
                           it->dump());
  }
  return it->get<std::int64_t>();
}

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The agent's share of the machine (AgentConfig::driver_threads): the thread
// count when the coordinate does not set the threads axis itself.
Status ParseResources(const json& job, JobSettings* out) {
  auto resources = job.find("resources");
  if (resources == job.end() || !resources->is_object() || job["coordinate"].contains("threads")) {
    return Status::Ok();
  }
  const plan_document::IntegerField& field = plan_document::kResourceThreads;
  ORCH_ASSIGN_OR_RETURN(std::int64_t threads,
                        IntegerField(*resources, "job.resources", "threads", field.fallback));
  out->threads = static_cast<std::int32_t>(std::min(threads, field.max));
  return Status::Ok();
}

// A capture field: absent, its default; else a non-negative integer in the field's
// range (plan_document/job_fields.h, the limits the planner checked the spec with).
Result<std::int64_t> CaptureField(const json& capture, const char* key,
                                  const plan_document::IntegerField& field) {
  ORCH_ASSIGN_OR_RETURN(std::int64_t value, IntegerField(capture, "capture", key, field.fallback));
  ORCH_RETURN_IF_ERROR(plan_document::CheckRange(field, value));
  return value;
}

Status ParseCapture(const json& capture, CaptureSettings* out) {
  if (!capture.is_object()) return Status::Ok();
  if (capture.contains(plan_document::kFormerTopLogitsKey)) {
    return InvalidArgument("capture.top_k: renamed to capture.top_logits, got " +
                           capture.dump().substr(0, 80));
  }
  ORCH_ASSIGN_OR_RETURN(std::int64_t top_logits,
                        CaptureField(capture, "top_logits", plan_document::kTopLogits));
  out->top_logits = static_cast<std::uint32_t>(top_logits);
  ORCH_ASSIGN_OR_RETURN(out->full_every,
                        CaptureField(capture, "full_every", plan_document::kFullEvery));
  ORCH_ASSIGN_OR_RETURN(
      out->full_row_budget_bytes,
      CaptureField(capture, "full_row_budget_bytes", plan_document::kFullRowBudgetBytes));
  auto windows = capture.find("full_windows");
  if (windows == capture.end() || windows->is_null()) return Status::Ok();
  if (!windows->is_array()) {
    return InvalidArgument("capture.full_windows: expected [[begin, end], ...], got " +
                           windows->dump());
  }
  for (const json& window : *windows) {
    if (!window.is_array() || window.size() != 2 || !window[0].is_number_integer() ||
        !window[1].is_number_integer() || window[0].get<std::int64_t>() < 0 ||
        window[1].get<std::int64_t>() < window[0].get<std::int64_t>()) {
      return InvalidArgument(
          "capture.full_windows: expected [begin, end] with 0 <= begin <= end, got " +
          window.dump());
    }
    out->full_windows.emplace_back(window[0].get<std::int64_t>(), window[1].get<std::int64_t>());
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

// `messages`: a non-empty array of {"role": system|user|assistant, "content": STRING}.
Status ParseMessages(const json& messages, WorkloadSettings* out) {
  if (!messages.is_array() || messages.empty()) {
    return InvalidArgument("workload " + out->name +
                           ": messages: expected a non-empty array of {\"role\", \"content\"}, "
                           "got " +
                           messages.dump().substr(0, 80));
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& message = messages[i];
    std::string where = "workload " + out->name + ": messages[" + std::to_string(i) + "]";
    if (!message.is_object()) {
      return InvalidArgument(where + ": expected an object, got " + message.dump().substr(0, 80));
    }
    auto role = message.find("role");
    if (role == message.end() || !role->is_string() ||
        (*role != "system" && *role != "user" && *role != "assistant")) {
      return InvalidArgument(where + ".role: expected \"system\", \"user\" or \"assistant\", got " +
                             (role == message.end() ? "nothing" : role->dump().substr(0, 80)));
    }
    auto content = message.find("content");
    if (content == message.end() || !content->is_string()) {
      return InvalidArgument(
          where + ".content: expected a string, got " +
          (content == message.end() ? "nothing" : content->dump().substr(0, 80)));
    }
    out->messages.push_back({role->get<std::string>(), content->get<std::string>()});
  }
  return Status::Ok();
}

Status ParseGenerate(const json& workload, WorkloadSettings* out) {
  out->kind = WorkloadSettings::Kind::kGenerate;
  ORCH_ASSIGN_OR_RETURN(out->max_tokens, IntegerField(workload, "workload", "max_tokens", 0));
  bool has_prompt = workload.contains("prompt") && !workload["prompt"].is_null();
  if (workload.contains("messages")) {
    if (has_prompt) {
      return InvalidArgument("workload " + out->name +
                             ": generate takes prompt or messages, not both");
    }
    ORCH_RETURN_IF_ERROR(ParseMessages(workload["messages"], out));
  } else {
    out->prompt = StringField(workload, "prompt");
  }
  if ((out->prompt.empty() && !out->has_messages()) || out->max_tokens == 0) {
    return InvalidArgument("workload " + out->name +
                           ": generate needs a prompt (or messages) and max_tokens > 0");
  }
  return Status::Ok();
}

// `context` + `continuation`: both strings, the continuation not empty, and
// neither beside `text` or `tokens`.
Status ParseContinuation(const json& workload, WorkloadSettings* out) {
  if (workload.contains("text") || workload.contains("tokens")) {
    return InvalidArgument("workload " + out->name +
                           ": teacher_forced takes text, tokens, or context with continuation, "
                           "not several");
  }
  for (const char* key : {"context", "continuation"}) {
    if (!workload.contains(key) || !workload[key].is_string()) {
      return InvalidArgument(
          "workload " + out->name + "." + key +
          ": expected a string (context and continuation go together), got " +
          (workload.contains(key) ? workload[key].dump().substr(0, 80) : std::string("nothing")));
    }
  }
  out->context = workload["context"].get<std::string>();
  out->continuation = workload["continuation"].get<std::string>();
  if (out->continuation.empty()) {
    return InvalidArgument("workload " + out->name + ".continuation: expected a non-empty string");
  }
  out->has_continuation = true;
  return Status::Ok();
}

Status ParseTeacherForced(const json& workload, WorkloadSettings* out) {
  out->kind = WorkloadSettings::Kind::kTeacherForced;
  ORCH_ASSIGN_OR_RETURN(out->positions, IntegerField(workload, "workload", "positions", 0));
  if (workload.contains("context") || workload.contains("continuation"))
    return ParseContinuation(workload, out);
  if (workload.contains("tokens")) return ParseTokens(workload["tokens"], out);
  if (!workload.contains("text") || !workload["text"].is_string()) {
    return InvalidArgument("workload " + out->name +
                           ": teacher_forced needs text, tokens, or context with continuation");
  }
  out->text = workload["text"].get<std::string>();
  return Status::Ok();
}

Status ParseWorkload(const json& workload, WorkloadSettings* out) {
  if (!workload.is_object()) {
    return InvalidArgument("workload: expected an object, got " + workload.dump().substr(0, 80));
  }
  out->name = StringField(workload, "name");
  std::string kind = StringField(workload, "kind");
  if (kind == "teacher_forced") return ParseTeacherForced(workload, out);
  if (kind == "generate") return ParseGenerate(workload, out);
  return InvalidArgument("workload.kind: expected teacher_forced or generate, got \"" + kind +
                         "\"");
}

// Where the plan tells the file's weight type: a synth recipe's `type=`, or the
// key of the pinned variant whose sha256 is the requirement.
std::string PlannedModelType(const std::string& requirement, const json& spec) {
  if (requirement.rfind("synth:", 0) == 0) {
    std::size_t at = requirement.find("type=");
    if (at == std::string::npos) return "f32";
    std::size_t end = requirement.find(',', at);
    return Lower(
        requirement.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5));
  }
  if (!spec.is_object() || !spec.contains("variants") || !spec["variants"].is_object()) return "";
  for (const auto& [quant, variant] : spec["variants"].items()) {
    if (!variant.is_object()) continue;
    std::string sha = StringField(variant, "sha256");
    if (!sha.empty() && requirement == "sha256:" + sha) return Lower(quant);
  }
  return "";
}

Status ParseModel(const json& model, JobSettings* out) {
  if (!model.is_object()) {
    return InvalidArgument("model: expected an object, got " + model.dump().substr(0, 80));
  }
  out->model_requirement = StringField(model, "requirement");
  out->model_path = StringField(model, "path");
  out->model_sha256 = StringField(model, "sha256");
  out->cache_dir = StringField(model, "cache_dir");
  out->hash_cache = StringField(model, "hash_cache");
  out->model_type =
      PlannedModelType(out->model_requirement, model.contains("spec") ? model["spec"] : json());
  return Status::Ok();
}

// The value of a rule's axis as the settings hold it (defaults included).
std::string SettingText(const JobSettings& s, std::string_view axis) {
  if (axis == "kv") return s.type_k + "/" + s.type_v;
  if (axis == "attention") return std::string(AttentionName(s.attention));
  if (axis == "tp") return std::to_string(s.tp);
  if (axis == "hardware") return s.hardware;
  ORCH_CHECK(false) << "combination rule on axis " << axis << ", which SettingText lacks";
  return "";
}

std::string Shown(std::string_view axis, const std::string& text) {
  bool number = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  return std::string(axis) + " = " + (number ? text : "\"" + text + "\"");
}

Status CheckCombination(const JobSettings& settings) {
  for (const CombinationRule& rule : CombinationRules()) {
    std::string when = SettingText(settings, rule.when.axis);
    std::string needs = SettingText(settings, rule.needs.axis);
    if (!Holds(rule.when, when) || Holds(rule.needs, needs)) continue;
    return Status(StatusCode::kFailedPrecondition,
                  Shown(rule.when.axis, when) + " needs " + DescribeCondition(rule.needs) +
                      ", got " + Shown(rule.needs.axis, needs) + ": " + std::string(rule.reason));
  }
  return Status::Ok();
}

}  // namespace

CaptureSettings CaptureSettings::ForRun(std::int64_t positions, std::int64_t vocab) const {
  CaptureSettings out = *this;
  constexpr std::int64_t kBytesPerLogit = 4;
  out.every_row = full_row_budget_bytes > 0 && positions > 0 && vocab > 0 &&
                  positions <= full_row_budget_bytes / (vocab * kBytesPerLogit);
  return out;
}

bool CaptureSettings::WantsFullRow(std::int64_t position) const {
  if (every_row) return true;
  if (full_every > 0 && position % full_every == 0) return true;
  for (const auto& [begin, end] : full_windows)
    if (position >= begin && position < end) return true;
  return false;
}

bool IsKnownCacheType(std::string_view type) {
  const std::vector<std::string_view>& types = FindJobAxis("kv")->values;
  return std::find(types.begin(), types.end(), type) != types.end();
}
bool IsKnownWeightType(std::string_view type) {
  const std::vector<std::string_view>& types = FindJobAxis("quant")->values;
  return std::find(types.begin(), types.end(), type) != types.end();
}

Result<JobSettings> ParseJob(std::string_view json_text) {
  json job = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!job.is_object()) return InvalidArgument("job: stdin is not a JSON object");
  JobSettings settings;
  settings.run_id = StringField(job, "run_id");
  settings.job_id = StringField(job, "job_id");
  if (job.contains("requirements") && job["requirements"].is_object())
    settings.engine = StringField(job["requirements"], "engine");
  if (!job.contains("coordinate") || !job["coordinate"].is_object())
    return InvalidArgument("job.coordinate: missing or not an object");
  for (const auto& [axis, value] : job["coordinate"].items())
    ORCH_RETURN_IF_ERROR(ApplyAxis(axis, AxisText(value), &settings));
  ORCH_RETURN_IF_ERROR(ParseResources(job, &settings));
  ORCH_RETURN_IF_ERROR(ParseWorkload(job.value("workload", json()), &settings.workload));
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

const std::vector<std::string>& LoadAxes() {
  static const std::vector<std::string> axes = {"quant", "cpu_backend", "repack", "hardware", "tp"};
  return axes;
}

std::string ModelLoadKey(const JobSettings& settings, std::string_view model_path,
                         std::string_view model_sha256) {
  // Length-prefixed fields: no value can be mistaken for another's.
  std::string key;
  auto add = [&key](std::string_view field) {
    key += std::to_string(field.size()) + ":";
    key += field;
  };
  add(model_path);
  add(model_sha256);
  add(settings.quant);
  add(settings.cpu_backend);
  add(settings.repack ? "on" : "off");
  add(settings.hardware);
  add(std::to_string(settings.tp));
  return key;
}

}  // namespace orch::drivers::llamacpp
