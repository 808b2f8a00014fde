#include "plan_document/job_spec.h"

#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using nlohmann::json;

json ScalarJson(const Scalar& value) {
  return std::visit([](const auto& v) { return json(v); }, value);
}

json JobJson(const Document& document, const Job& job) {
  json out = {{"id", job.id},
              {"workload", job.workload == kNone ? job.unknown_workload
                                                 : document.workloads[job.workload].name}};
  if (!job.cell.empty()) out["cell"] = job.cell;
  if (!job.kind.empty()) out["kind"] = job.kind;
  if (job.has_repeat) out["repeat"] = job.repeat;
  if (job.coordinate != kNone) {
    json coordinate = json::object();
    for (const auto& [axis, value] : document.coordinates[job.coordinate]) {
      coordinate[axis] = ScalarJson(value);
    }
    out["coordinate"] = coordinate;
  }
  if (job.requirements != kNone) {
    const Requirements& r = document.requirements[job.requirements];
    out["requirements"] = {
        {"engine", r.engine}, {"hardware", r.hardware}, {"gpus", r.gpus}, {"model", r.model}};
  }
  return out;
}

// An object of a document built in memory, written through the plan writer so that the
// typed fields have one JSON form.
json MemberOf(const Document& document, const char* key) {
  return json::parse(WritePlanJson(document), nullptr, false)[key];
}

}  // namespace

std::string WriteJobSpec(const Document& document, const Job& job) {
  const Workload& workload = document.workloads[job.workload];
  std::string workload_json = workload.json;
  if (workload_json.empty()) {
    workload_json = MemberOf(document, "workloads")[job.workload].dump();
  }
  std::string model_json = "{}";
  if (document.model) {
    model_json =
        document.model->json.empty() ? MemberOf(document, "model").dump() : document.model->json;
  }
  // Concatenated: the objects are already JSON text, and re-parsing them for every
  // Assign would cost more than the rest of dispatch.
  return "{\"experiment\":" + json(document.experiment).dump() +
         ",\"job\":" + JobJson(document, job).dump() + ",\"workload\":" + workload_json +
         ",\"model\":" + model_json + "}";
}

Result<JobSpec> ReadJobSpec(std::string_view text) {
  json spec = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return InvalidArgument("job spec: not a JSON object");
  JobSpec out;
  if (auto it = spec.find("experiment"); it != spec.end() && it->is_string()) {
    out.experiment = it->get<std::string>();
  }
  for (auto [key, field] :
       {std::pair{"job", &out.job}, {"workload", &out.workload}, {"model", &out.model}}) {
    if (auto it = spec.find(key); it != spec.end()) *field = it->dump();
  }
  return out;
}

}  // namespace orch::plan_document
