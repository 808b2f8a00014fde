#include "agent/driver_job.h"

#include <nlohmann/json.hpp>

#include "plan_document/job_spec.h"

namespace orch::agent {
namespace {

using nlohmann::json;

// A member of the job spec as JSON; `fallback` when the spec has none.
json Member(const std::string& text, json fallback) {
  return text.empty() ? fallback : json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

Result<DriverJob> BuildDriverJob(const protocol::Assign& assign, ModelResolver& models,
                                 std::int32_t driver_threads) {
  plan_document::JobSpec spec;
  if (!assign.job_spec.empty()) {
    Result<plan_document::JobSpec> read = plan_document::ReadJobSpec(assign.job_spec);
    if (!read.ok()) {
      return InvalidArgument("assign " + assign.run_id + ": job_spec is not a JSON object");
    }
    spec = std::move(*read);
  }
  ORCH_ASSIGN_OR_RETURN(ResolvedModel resolved, models.Resolve(assign.requirements.model));
  json coordinate = json::object();
  for (const protocol::KeyValue& kv : assign.coordinate) coordinate[kv.key] = kv.value;
  json workload = Member(spec.workload, json{{"name", assign.workload}});
  // Sent once, at top level, named as job documents name it (ReadJobSpec).
  if (workload.is_object()) workload.erase("capture");
  json capture = Member(spec.capture, json::object());
  json model = Member(spec.model, json::object());
  json document = {
      {"run_id", assign.run_id},
      {"job_id", assign.job_id},
      {"experiment", spec.experiment},
      {"coordinate", coordinate},
      {"workload", workload},
      {"model",
       {{"requirement", assign.requirements.model},
        {"path", resolved.path},
        {"sha256", resolved.sha256},
        {"cache_dir", models.cache_dir()},
        {"hash_cache", models.hash_cache_file()},
        {"spec", model}}},
      {"capture", capture},
      {"requirements",
       {{"engine", assign.requirements.engine},
        {"hardware", assign.requirements.hardware},
        {"gpus", assign.requirements.gpus}}},
  };
  if (driver_threads > 0) document["resources"] = {{"threads", driver_threads}};
  return DriverJob{spec.experiment, document.dump(), resolved.path};
}

void AddServer(DriverJob& job, const JobServer& server) {
  json document = json::parse(job.json);
  json object = {{"url", server.url},
                 {"api_key_file", server.api_key_file},
                 {"mode", server.mode},
                 {"jobs_before", server.jobs_before}};
  if (server.mode == "launched") {
    object["log"] = server.log;
    object["coordinate"] = server.coordinate;
  }
  document["server"] = std::move(object);
  job.json = document.dump();
}

}  // namespace orch::agent
