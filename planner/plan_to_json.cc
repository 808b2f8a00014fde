#include "planner/plan_to_json.h"

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "plan_document/plan_json.h"
#include "planner/canonical_json.h"
#include "planner/axes.h"
#include "planner/job_id.h"

namespace orch::planner {
namespace {

using Json = nlohmann::ordered_json;

plan_document::Scalar ScalarOf(const AxisValue& value) {
  if (value.is_string()) return value.as_string();
  if (value.is_int()) return value.as_int();
  if (value.is_float()) return value.as_float();
  return value.as_bool();
}

plan_document::Coordinate CoordinateOf(const Coordinate& coordinate) {
  plan_document::Coordinate out;
  for (const auto& [axis, value] : coordinate) out.emplace_back(axis, ScalarOf(value));
  return out;
}

plan_document::Model ModelOf(const Model& model) {
  plan_document::Model out;
  out.name = model.name;
  out.synth = model.synth;
  if (!model.is_synth()) {
    out.file = model.file;
    out.sha256 = model.sha256;
  }
  for (const auto& [quant, v] : model.variants) out.variants[quant] = {v.file, v.sha256};
  return out;
}

plan_document::Workload WorkloadOf(const Workload& w) {
  plan_document::Workload out;
  out.name = w.name;
  out.kind = WorkloadKindName(w.kind);
  out.digest = WorkloadDigest(w);
  if (w.kind == WorkloadKind::kGenerate) {
    if (w.messages.empty()) {
      out.prompt = w.prompt;
    } else {
      out.messages = w.messages;
    }
    out.max_tokens = w.max_tokens;
  } else if (w.context) {
    // positions left out: the driver evaluates the context and continuation whole.
    out.context = w.context;
    out.continuation = w.continuation;
  } else {
    out.positions = w.positions;
    if (!w.tokens.empty())
      out.tokens = w.tokens;
    else
      out.text = w.text;
    out.text_file = w.text_file;
  }
  out.capture = plan_document::Capture{
      w.capture.top_logits, w.capture.full_every, {{}}, w.capture.full_row_budget_bytes};
  for (const auto& window : w.capture.full_windows) out.capture->full_windows->push_back(window);
  out.task = w.task;
  return out;
}

// A task workload: its case file whole, for reports to judge outputs by (docs/tasks.md).
plan_document::Workload TaskWorkloadOf(const TaskWorkload& task) {
  plan_document::Workload out;
  out.name = task.name;
  out.kind = "task";
  out.cases_file = task.cases_file;
  out.cases = task.cases;
  out.digest = Sha256Hex(CanonicalJsonText(nlohmann::json{{"cases", task.cases},
                                                          {"cases_file", task.cases_file},
                                                          {"kind", "task"},
                                                          {"name", task.name}}));
  return out;
}

plan_document::Axis AxisOf(const Axis& axis) {
  plan_document::Axis out;
  out.name = axis.name;
  out.baseline = ScalarOf(axis.baseline);
  for (const AxisValue& v : axis.alternatives) out.alternatives.push_back(ScalarOf(v));
  bool generate_only = !AxisApplies(axis.name, WorkloadKind::kTeacherForced);
  out.applies_to = generate_only ? "generate" : "all";
  return out;
}

Json DiagnosticJson(const std::string& file, const Diagnostic& d) {
  return {{"file", file},     {"line", d.pos.line},   {"column", d.pos.column},
          {"field", d.field}, {"message", d.message}, {"text", d.Format(file)}};
}

Json DiagnosticsArray(const std::string& file, const std::vector<Diagnostic>& list) {
  Json out = Json::array();
  for (const Diagnostic& d : list) out.push_back(DiagnosticJson(file, d));
  return out;
}

}  // namespace

plan_document::Document ToDocument(const Plan& plan) {
  plan_document::Document doc;
  doc.spec = plan.spec.file;
  doc.experiment = plan.spec.name;
  doc.description = plan.spec.description;
  doc.model = ModelOf(plan.spec.model);
  doc.baseline = CoordinateOf(plan.cells.front().coordinate);
  plan_document::Interner interner(doc);
  for (const Axis& axis : plan.spec.axes) {
    doc.axes.push_back(AxisOf(axis));
    doc.axes_varied += axis.alternatives.empty() ? 0 : 1;
  }
  for (const Workload& w : plan.spec.workloads) doc.workloads.push_back(WorkloadOf(w));
  // After the workloads jobs run, whose indices the jobs below keep.
  for (const TaskWorkload& t : plan.spec.tasks) doc.workloads.push_back(TaskWorkloadOf(t));
  doc.baseline_repeats = plan.spec.baseline_repeats;
  doc.cell_repeats = plan.spec.cell_repeats;
  for (const Cell& cell : plan.cells) {
    plan_document::Cell out;
    out.label = cell.label;
    out.requirements = interner.Add(cell.requirements);
    if (cell.is_combination()) {
      for (const auto& [name, value] : cell.coordinate) {
        if (CellChanges(plan.spec, cell, name)) out.changes.emplace_back(name, ScalarOf(value));
      }
    } else if (!cell.is_baseline()) {
      const Axis& axis = plan.spec.axes[cell.axis];
      out.axis = axis.name;
      out.value = ScalarOf(axis.alternatives[cell.alternative]);
    }
    out.round = cell.round;
    doc.cells.push_back(std::move(out));
  }
  for (const Job& job : plan.jobs) {
    const Cell& cell = plan.CellOf(job);
    ++doc.cells[job.cell].jobs;
    plan_document::Job& out = doc.jobs.emplace_back();
    out.id = job.id;
    out.cell = cell.label;
    out.kind = WorkloadKindName(plan.WorkloadOf(job).kind);
    out.workload = static_cast<std::uint32_t>(job.workload);
    out.repeat = static_cast<std::uint32_t>(job.repeat);
    out.has_repeat = true;
    out.coordinate = interner.Add(CoordinateOf(plan.JobCoordinate(job)));
    out.requirements = interner.Add(cell.requirements);
  }
  if (plan.spec.bisect) {
    doc.bisect = plan_document::Bisect{plan.spec.BisectAxisNames(), plan.spec.bisect->tolerance,
                                       plan.spec.bisect->max_rounds};
  }
  for (const Diagnostic& d : plan.warnings) {
    doc.warnings.push_back(
        {plan.spec.file, d.pos.line, d.pos.column, d.field, d.message, d.Format(plan.spec.file)});
  }
  return doc;
}

std::string PlanToJson(const Plan& plan) { return plan_document::WritePlanJson(ToDocument(plan)); }

std::string DiagnosticsToJson(const std::string& file, const Diagnostics& diagnostics) {
  Json out = {{"schema", "orch.plan-errors/1"},
              {"spec", file},
              {"errors", DiagnosticsArray(file, diagnostics.errors())},
              {"warnings", DiagnosticsArray(file, diagnostics.warnings())}};
  return out.dump(2) + "\n";
}

}  // namespace orch::planner
