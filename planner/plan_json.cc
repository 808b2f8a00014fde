#include "planner/plan_json.h"

#include <nlohmann/json.hpp>

#include "planner/axes.h"
#include "planner/job_id.h"

namespace orch::planner {
namespace {

using Json = nlohmann::ordered_json;

Json ValueJson(const AxisValue& value) {
  if (value.is_string()) return value.as_string();
  if (value.is_int()) return value.as_int();
  if (value.is_float()) return value.as_float();
  return value.as_bool();
}

Json CoordinateJson(const Coordinate& coordinate) {
  Json out = Json::object();
  for (const auto& [axis, value] : coordinate) out[axis] = ValueJson(value);
  return out;
}

Json ModelJson(const Model& model) {
  Json out = {{"name", model.name}};
  if (model.is_synth()) {
    out["synth"] = model.synth;
  } else {
    out["file"] = model.file;
    out["sha256"] = model.sha256;
  }
  Json variants = Json::object();
  for (const auto& [quant, v] : model.variants) {
    variants[quant] = {{"file", v.file}, {"sha256", v.sha256}};
  }
  out["variants"] = variants;
  return out;
}

Json WorkloadJson(const Workload& w) {
  Json out = {{"name", w.name}, {"kind", WorkloadKindName(w.kind)}, {"digest", WorkloadDigest(w)}};
  if (w.kind == WorkloadKind::kGenerate) {
    out["prompt"] = w.prompt;
    out["max_tokens"] = w.max_tokens;
  } else {
    out["positions"] = w.positions;
    if (!w.tokens.empty()) out["tokens"] = w.tokens;
    else out["text"] = w.text;
    if (!w.text_file.empty()) out["text_file"] = w.text_file;
  }
  Json windows = Json::array();
  for (const auto& [begin, end] : w.capture.full_windows) windows.push_back({begin, end});
  out["capture"] = {{"top_k", w.capture.top_k},
                    {"full_every", w.capture.full_every},
                    {"full_windows", windows}};
  return out;
}

Json AxesJson(const Spec& spec) {
  Json out = Json::array();
  for (const Axis& axis : spec.axes) {
    Json alternatives = Json::array();
    for (const AxisValue& v : axis.alternatives) alternatives.push_back(ValueJson(v));
    bool generate_only = !AxisApplies(axis.name, WorkloadKind::kTeacherForced);
    out.push_back({{"name", axis.name},
                   {"baseline", ValueJson(axis.baseline)},
                   {"alternatives", alternatives},
                   {"applies_to", generate_only ? "generate" : "all"}});
  }
  return out;
}

Json RequirementsJson(const Requirements& r) {
  return {{"engine", r.engine}, {"hardware", r.hardware}, {"gpus", r.gpus}, {"model", r.model}};
}

Json CellJson(const Plan& plan, const Cell& cell, int jobs) {
  Json out = {{"label", cell.label}, {"axis", nullptr}, {"value", nullptr}};
  if (!cell.is_baseline()) {
    const Axis& axis = plan.spec.axes[cell.axis];
    out["axis"] = axis.name;
    out["value"] = ValueJson(axis.alternatives[cell.alternative]);
  }
  out["jobs"] = jobs;
  out["requirements"] = RequirementsJson(cell.requirements);
  return out;
}

Json JobJson(const Plan& plan, const Job& job) {
  const Cell& cell = plan.CellOf(job);
  const Workload& w = plan.WorkloadOf(job);
  return {{"id", job.id},
          {"cell", cell.label},
          {"workload", w.name},
          {"kind", WorkloadKindName(w.kind)},
          {"repeat", job.repeat},
          {"coordinate", CoordinateJson(plan.JobCoordinate(job))},
          {"requirements", RequirementsJson(cell.requirements)}};
}

Json DiagnosticJson(const std::string& file, const Diagnostic& d) {
  return {{"file", file},       {"line", d.pos.line},       {"column", d.pos.column},
          {"field", d.field},   {"message", d.message},     {"text", d.Format(file)}};
}

Json DiagnosticsArray(const std::string& file, const std::vector<Diagnostic>& list) {
  Json out = Json::array();
  for (const Diagnostic& d : list) out.push_back(DiagnosticJson(file, d));
  return out;
}

}  // namespace

std::string PlanToJson(const Plan& plan) {
  std::vector<int> jobs_per_cell(plan.cells.size(), 0);
  for (const Job& job : plan.jobs) ++jobs_per_cell[job.cell];
  Json cells = Json::array();
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    cells.push_back(CellJson(plan, plan.cells[i], jobs_per_cell[i]));
  }
  Json jobs = Json::array();
  for (const Job& job : plan.jobs) jobs.push_back(JobJson(plan, job));
  Json workloads = Json::array();
  for (const Workload& w : plan.spec.workloads) workloads.push_back(WorkloadJson(w));
  int varied = 0;
  for (const Axis& axis : plan.spec.axes) varied += axis.alternatives.empty() ? 0 : 1;

  Json out = {
      {"schema", kPlanSchema},
      {"spec", plan.spec.file},
      {"experiment", {{"name", plan.spec.name}, {"description", plan.spec.description}}},
      {"model", ModelJson(plan.spec.model)},
      {"baseline", CoordinateJson(plan.cells.front().coordinate)},
      {"axes", AxesJson(plan.spec)},
      {"workloads", workloads},
      {"repeats", {{"baseline", plan.spec.baseline_repeats}, {"cells", plan.spec.cell_repeats}}},
      {"summary",
       {{"axes_varied", varied},
        {"cells", plan.cells.size()},
        {"workloads", plan.spec.workloads.size()},
        {"jobs", plan.jobs.size()}}},
      {"cells", cells},
      {"jobs", jobs},
      {"warnings", DiagnosticsArray(plan.spec.file, plan.warnings)},
  };
  return out.dump(2) + "\n";
}

std::string DiagnosticsToJson(const std::string& file, const Diagnostics& diagnostics) {
  Json out = {{"schema", "orch.plan-errors/1"},
              {"spec", file},
              {"errors", DiagnosticsArray(file, diagnostics.errors())},
              {"warnings", DiagnosticsArray(file, diagnostics.warnings())}};
  return out.dump(2) + "\n";
}

}  // namespace orch::planner
