#include "plan_document/job_spec.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan_document/job_fields.h"
#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using nlohmann::json;

json ScalarJson(const Scalar& value) {
  return std::visit([](const auto& v) { return json(v); }, value);
}

// The job object as a tree; the reference form (`dump()`: sorted keys, compact).
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

// Appends `value` as `dump()` writes it.
void Append(std::string& out, const json& value) { out += value.dump(); }

// The same bytes as JobJson(...).dump(), written straight: the coordinator writes one
// for every Assign, and building the tree (a map per object) cost more than the rest of
// the Assign. Keys in the order dump() sorts them. A coordinate read from plan JSON is
// sorted with unique axes (the reader takes it from a JSON object); one that is not
// (a document built otherwise) goes through the tree.
std::string JobText(const Document& document, const Job& job) {
  std::optional<CoordinateView> coordinate;
  if (job.coordinate != kNone) coordinate = document.coordinates[job.coordinate];
  if (coordinate &&
      std::adjacent_find(coordinate->begin(), coordinate->end(), [](const auto& a, const auto& b) {
        return a.first >= b.first;
      }) != coordinate->end()) {
    return JobJson(document, job).dump();
  }
  std::string out = "{";
  auto key = [&out](const char* name) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += name;
    out += "\":";
  };
  if (!job.cell.empty()) {
    key("cell");
    Append(out, job.cell);
  }
  if (coordinate) {
    key("coordinate");
    out += '{';
    for (const auto& [axis, value] : *coordinate) {
      if (out.back() != '{') out += ',';
      Append(out, axis);
      out += ':';
      Append(out, ScalarJson(value));
    }
    out += '}';
  }
  key("id");
  Append(out, job.id);
  if (!job.kind.empty()) {
    key("kind");
    Append(out, job.kind);
  }
  if (job.has_repeat) {
    key("repeat");
    out += std::to_string(job.repeat);
  }
  if (job.requirements != kNone) {
    const Requirements& r = document.requirements[job.requirements];
    key("requirements");
    out += "{\"engine\":";
    Append(out, r.engine);
    out += ",\"gpus\":" + std::to_string(r.gpus) + ",\"hardware\":";
    Append(out, r.hardware);
    out += ",\"model\":";
    Append(out, r.model);
    out += '}';
  }
  key("workload");
  Append(out, job.workload == kNone ? job.unknown_workload : document.workloads[job.workload].name);
  out += '}';
  return out;
}

// An object of a document built in memory, written through the plan writer so that the
// typed fields have one JSON form.
json MemberOf(const Document& document, const char* key) {
  return json::parse(WritePlanJson(document), nullptr, false)[key];
}

}  // namespace

std::string WriteJobSpec(const Document& document, const Job& job) {
  // A job naming no workload of the document (the coordinator refuses such plans) gets
  // null rather than another job's workload.
  std::string workload_json = "null";
  if (job.workload < document.workloads.size()) {
    workload_json = document.workloads[job.workload].json;
    if (workload_json.empty()) {
      workload_json = MemberOf(document, "workloads")[job.workload].dump();
    }
  }
  std::string model_json = "{}";
  if (document.model) {
    model_json =
        document.model->json.empty() ? MemberOf(document, "model").dump() : document.model->json;
  }
  // Concatenated: the objects are already JSON text, and re-parsing them for every
  // Assign would cost more than the rest of dispatch.
  return "{\"experiment\":" + json(document.experiment).dump() +
         ",\"job\":" + JobText(document, job) + ",\"workload\":" + workload_json +
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
  auto workload = spec.find("workload");
  if (workload == spec.end() || !workload->is_object()) return out;
  auto capture = workload->find("capture");
  if (capture == workload->end()) return out;
  json normalized = *capture;
  if (normalized.is_object() && normalized.contains(kFormerTopLogitsKey) &&
      !normalized.contains("top_logits")) {
    normalized["top_logits"] = normalized[kFormerTopLogitsKey];
    normalized.erase(kFormerTopLogitsKey);
  }
  out.capture = normalized.dump();
  return out;
}

}  // namespace orch::plan_document
