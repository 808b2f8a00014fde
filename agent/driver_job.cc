#include "agent/driver_job.h"

#include <nlohmann/json.hpp>

namespace orch::agent {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Result<DriverJob> BuildDriverJob(const protocol::Assign& assign,
                                 ModelResolver& models,
                                 std::int32_t driver_threads) {
  json spec = json::object();
  if (!assign.workload_spec.empty()) {
    spec =
        json::parse(assign.workload_spec, nullptr, /*allow_exceptions=*/false);
    if (!spec.is_object()) {
      return InvalidArgument("assign " + assign.run_id +
                             ": workload_spec is not a JSON object");
    }
  }
  ORCH_ASSIGN_OR_RETURN(ResolvedModel resolved,
                        models.Resolve(assign.requirements.model));
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
        {"path", resolved.path},
        {"sha256", resolved.sha256},
        {"cache_dir", models.cache_dir()},
        {"spec", model}}},
      {"capture", capture},
      {"requirements",
       {{"engine", assign.requirements.engine},
        {"hardware", assign.requirements.hardware},
        {"gpus", assign.requirements.gpus}}},
  };
  if (driver_threads > 0) document["resources"] = {{"threads", driver_threads}};
  return DriverJob{StringField(spec, "experiment"), document.dump()};
}

}  // namespace orch::agent
