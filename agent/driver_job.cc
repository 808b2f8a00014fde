#include "agent/driver_job.h"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace orch::agent {
namespace {

using nlohmann::json;

std::string ResolveModel(const std::string& requirement,
                         const std::vector<std::string>& model_dirs) {
  if (requirement.empty()) return "";
  std::error_code error;
  if (std::filesystem::path(requirement).is_absolute()) {
    return std::filesystem::is_regular_file(requirement, error) ? requirement
                                                                : "";
  }
  for (const std::string& dir : model_dirs) {
    std::filesystem::path candidate = std::filesystem::path(dir) / requirement;
    if (std::filesystem::is_regular_file(candidate, error))
      return candidate.string();
  }
  return "";
}

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Result<DriverJob> BuildDriverJob(const protocol::Assign& assign,
                                 const std::vector<std::string>& model_dirs) {
  json spec = json::object();
  if (!assign.workload_spec.empty()) {
    spec =
        json::parse(assign.workload_spec, nullptr, /*allow_exceptions=*/false);
    if (!spec.is_object()) {
      return InvalidArgument("assign " + assign.run_id +
                             ": workload_spec is not a JSON object");
    }
  }
  json coordinate = json::object();
  for (const protocol::KeyValue& kv : assign.coordinate)
    coordinate[kv.key] = kv.value;
  json workload = spec.contains("workload") ? spec["workload"]
                                            : json{{"name", assign.workload}};
  json capture = workload.is_object() && workload.contains("capture")
                     ? workload["capture"]
                     : json::object();
  json model = spec.contains("model") ? spec["model"] : json::object();
  json document = {
      {"run_id", assign.run_id},
      {"job_id", assign.job_id},
      {"experiment", StringField(spec, "experiment")},
      {"coordinate", coordinate},
      {"workload", workload},
      {"model",
       {{"requirement", assign.requirements.model},
        {"path", ResolveModel(assign.requirements.model, model_dirs)},
        {"spec", model}}},
      {"capture", capture},
      {"requirements",
       {{"engine", assign.requirements.engine},
        {"hardware", assign.requirements.hardware},
        {"gpus", assign.requirements.gpus}}},
  };
  return DriverJob{StringField(spec, "experiment"), document.dump()};
}

}  // namespace orch::agent
