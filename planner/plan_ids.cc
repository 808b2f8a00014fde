#include "planner/plan_ids.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/job_id.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

using nlohmann::json;

// "plan.FIELD: RULE"; a FIELD given as a prefix ("jobs[3].") names the object itself.
Status Field(std::string field, const std::string& rule) {
  if (!field.empty() && field.back() == '.') field.pop_back();
  return InvalidArgument((field.empty() ? "plan" : "plan." + field) + ": " + rule);
}

// The member `key` of `object` when it has type `is`; an error naming it otherwise.
template <typename Check>
Result<const json*> Member(const json& object, const char* key, const std::string& at,
                           Check is, const char* type) {
  auto it = object.find(key);
  if (it == object.end() || !is(*it)) {
    return Field(at + key, std::string("required ") + type + " (it makes the job ids)");
  }
  return &*it;
}

Result<int> Int(const json& object, const char* key, const std::string& at) {
  ORCH_ASSIGN_OR_RETURN(const json* value,
                        Member(object, key, at, [](const json& v) {
                          return v.is_number_integer() && v.get<std::int64_t>() >= INT32_MIN &&
                                 v.get<std::int64_t>() <= INT32_MAX;
                        }, "integer"));
  return static_cast<int>(value->get<std::int64_t>());
}

Result<std::string> String(const json& object, const char* key, const std::string& at) {
  ORCH_ASSIGN_OR_RETURN(const json* value,
                        Member(object, key, at, [](const json& v) { return v.is_string(); },
                               "string"));
  return value->get<std::string>();
}

Result<CapturePolicy> ReadCapture(const json& workload, const std::string& at) {
  ORCH_ASSIGN_OR_RETURN(const json* capture,
                        Member(workload, "capture", at,
                               [](const json& v) { return v.is_object(); }, "object"));
  CapturePolicy policy;
  std::string where = at + "capture.";
  ORCH_ASSIGN_OR_RETURN(policy.top_k, Int(*capture, "top_k", where));
  ORCH_ASSIGN_OR_RETURN(policy.full_every, Int(*capture, "full_every", where));
  ORCH_ASSIGN_OR_RETURN(const json* windows,
                        Member(*capture, "full_windows", where,
                               [](const json& v) { return v.is_array(); }, "array"));
  for (const json& window : *windows) {
    bool pair = window.is_array() && window.size() == 2 && window[0].is_number_integer() &&
                window[1].is_number_integer();
    if (!pair) return Field(where + "full_windows", "each window must be [begin, end]");
    policy.full_windows.emplace_back(window[0].get<int>(), window[1].get<int>());
  }
  return policy;
}

// The workload as the planner held it, from its JSON object (planner/plan_json.cc).
Result<Workload> ReadWorkload(const json& object, const std::string& at) {
  if (!object.is_object()) return Field(at, "must be an object");
  Workload w;
  ORCH_ASSIGN_OR_RETURN(w.name, String(object, "name", at));
  ORCH_ASSIGN_OR_RETURN(std::string kind, String(object, "kind", at));
  if (kind == "generate") {
    w.kind = WorkloadKind::kGenerate;
    ORCH_ASSIGN_OR_RETURN(w.prompt, String(object, "prompt", at));
    ORCH_ASSIGN_OR_RETURN(w.max_tokens, Int(object, "max_tokens", at));
  } else if (kind == "teacher_forced") {
    ORCH_ASSIGN_OR_RETURN(w.positions, Int(object, "positions", at));
    auto tokens = object.find("tokens");
    if (tokens != object.end()) {
      if (!tokens->is_array()) return Field(at + "tokens", "must be an array of integers");
      for (const json& token : *tokens) {
        if (!token.is_number_integer()) return Field(at + "tokens", "must be an array of integers");
        w.tokens.push_back(token.get<std::int64_t>());
      }
    } else {
      ORCH_ASSIGN_OR_RETURN(w.text, String(object, "text", at));
    }
  } else {
    return Field(at + "kind", "must be \"teacher_forced\" or \"generate\", got " + json(kind).dump());
  }
  ORCH_ASSIGN_OR_RETURN(w.capture, ReadCapture(object, at));
  return w;
}

Result<AxisValue> ReadAxisValue(const json& value, const std::string& at) {
  if (value.is_string()) return AxisValue::String(value.get<std::string>());
  if (value.is_boolean()) return AxisValue::Bool(value.get<bool>());
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX) {
      return Field(at, "integer out of range");
    }
    return AxisValue::Int(value.get<std::int64_t>());
  }
  if (value.is_number_float()) return AxisValue::Float(value.get<double>());
  return Field(at, "must be a string, number or boolean, got " + value.dump());
}

Result<std::string> IdOf(const json& job, const std::string& experiment,
                         const std::map<std::string, Workload>& workloads,
                         std::map<std::string, std::string>& digests, const std::string& at) {
  if (!job.is_object()) return Field(at, "must be an object");
  ORCH_ASSIGN_OR_RETURN(std::string name, String(job, "workload", at));
  auto workload = workloads.find(name);
  if (workload == workloads.end()) return Field(at + "workload", "unknown workload " + name);
  ORCH_ASSIGN_OR_RETURN(const json* coordinate,
                        Member(job, "coordinate", at,
                               [](const json& v) { return v.is_object(); }, "object"));
  Coordinate axes;
  for (const auto& [axis, value] : coordinate->items()) {
    ORCH_ASSIGN_OR_RETURN(axes[axis], ReadAxisValue(value, at + "coordinate." + axis));
  }
  ORCH_ASSIGN_OR_RETURN(int repeat, Int(job, "repeat", at));
  ORCH_ASSIGN_OR_RETURN(const json* requirements,
                        Member(job, "requirements", at,
                               [](const json& v) { return v.is_object(); }, "object"));
  ORCH_ASSIGN_OR_RETURN(std::string model, String(*requirements, "model", at + "requirements."));
  std::string& digest = digests[name];
  if (digest.empty()) digest = WorkloadDigest(workload->second);
  return JobIdOf(CanonicalJob(CanonicalAxes(axes, workload->second.kind), experiment, model,
                              repeat, digest));
}

Status CheckIds(const json& plan) {
  if (!plan.is_object()) return Field("", "must be an object");
  ORCH_ASSIGN_OR_RETURN(const json* experiment,
                        Member(plan, "experiment", "",
                               [](const json& v) { return v.is_object(); }, "object"));
  ORCH_ASSIGN_OR_RETURN(std::string name, String(*experiment, "name", "experiment."));
  ORCH_ASSIGN_OR_RETURN(const json* listed,
                        Member(plan, "workloads", "",
                               [](const json& v) { return v.is_array(); }, "array"));
  std::map<std::string, Workload> workloads;
  for (std::size_t i = 0; i < listed->size(); ++i) {
    std::string at = "workloads[" + std::to_string(i) + "].";
    ORCH_ASSIGN_OR_RETURN(Workload w, ReadWorkload((*listed)[i], at));
    workloads.emplace(w.name, std::move(w));
  }
  ORCH_ASSIGN_OR_RETURN(const json* jobs,
                        Member(plan, "jobs", "", [](const json& v) { return v.is_array(); },
                               "array"));
  std::map<std::string, std::string> digests;
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    std::string at = "jobs[" + std::to_string(i) + "].";
    const json& job = (*jobs)[i];
    ORCH_ASSIGN_OR_RETURN(std::string expected, IdOf(job, name, workloads, digests, at));
    ORCH_ASSIGN_OR_RETURN(std::string id, String(job, "id", at));
    if (id != expected) {
      return Field(at + "id", id + " is not the id of this job's coordinate, workload, repeat "
                              "and model (" + expected + "): make the plan with orch plan, "
                              "and do not edit it");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckPlanJobIds(const nlohmann::json& plan) {
  try {
    return CheckIds(plan);
  } catch (const json::exception& e) {  // a value out of the range its getter reads
    return InvalidArgument(std::string("plan: ") + e.what());
  }
}

}  // namespace orch::planner
