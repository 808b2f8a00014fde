#include "report/plan_view.h"

#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"

namespace orch::report {
namespace {

Status Field(const std::string& where, const std::string& what) {
  return InvalidArgument("plan." + where + ": " + what);
}

// A count the plan asks for; absent when not said or not positive (nothing is flagged).
std::optional<std::uint64_t> Count(const std::optional<std::int64_t>& value) {
  if (!value || *value <= 0) return std::nullopt;
  return static_cast<std::uint64_t>(*value);
}

// The `task` object of a per-case workload; absent when there is none or it is malformed
// (then the workload is reported as an ordinary one).
std::optional<TaskCoordinate> TaskOf(const plan_document::Workload& w) {
  if (w.json.empty()) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(w.json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("task") || !doc["task"].is_object()) return std::nullopt;
  const nlohmann::json& t = doc["task"];
  if (!t.contains("workload") || !t["workload"].is_string() || !t.contains("case") ||
      !t["case"].is_string()) {
    return std::nullopt;
  }
  TaskCoordinate task{t["workload"].get<std::string>(), t["case"].get<std::string>(), -1};
  if (t.contains("choice") && t["choice"].is_number_integer()) task.choice = t["choice"].get<int>();
  return task;
}

PlannedWorkload WorkloadOf(const plan_document::Workload& w) {
  PlannedWorkload workload;
  workload.name = w.name;
  workload.kind = w.kind == "generate" ? WorkloadKind::kGenerate : WorkloadKind::kTeacherForced;
  if (workload.kind == WorkloadKind::kGenerate) {
    workload.max_tokens = Count(w.max_tokens);
  } else {
    workload.positions = Count(w.positions);
  }
  if (w.capture) {
    workload.top_k = static_cast<int>(Count(w.capture->top_logits).value_or(0));
    workload.full_every = Count(w.capture->full_every).value_or(0);
  }
  workload.task = TaskOf(w);
  return workload;
}

// The model and baseline are shown, never required: a plan without them still reports.
void ModelAndBaseline(const plan_document::Document& doc, PlanView& view) {
  if (doc.model) {
    view.model.name = doc.model->name;
    if (!doc.model->sha256.empty()) {
      view.model.id = "sha256:" + doc.model->sha256;
    } else if (!doc.model->synth.empty()) {
      view.model.id = "synth:" + doc.model->synth;
    }
  }
  if (!doc.baseline) return;
  for (const auto& [axis, value] : *doc.baseline) {
    view.baseline.emplace_back(axis, plan_document::ScalarText(value));
  }
}

Status Jobs(const plan_document::Document& doc, PlanView& view) {
  for (std::size_t i = 0; i < doc.jobs.size(); ++i) {
    const plan_document::Job& j = doc.jobs[i];
    const std::string at = "jobs[" + std::to_string(i) + "].";
    if (j.cell.empty()) return Field(at + "cell", "required string");
    if (!j.has_repeat) return Field(at + "repeat", "required integer");
    const std::string& workload =
        j.workload == plan_document::kNone ? j.unknown_workload : doc.workloads[j.workload].name;
    view.jobs.push_back({j.id, j.cell, workload, static_cast<int>(j.repeat)});
  }
  return Status();
}

}  // namespace

Result<PlanView> ParsePlanView(std::string_view json) {
  Result<plan_document::Document> doc = plan_document::ReadPlanJson(json);
  if (!doc.ok()) return InvalidArgument("plan JSON: " + doc.status().message());
  PlanView view;
  view.experiment = doc->experiment;
  ModelAndBaseline(*doc, view);
  for (const plan_document::Workload& w : doc->workloads) {
    if (w.kind == "task") {
      view.tasks.push_back({w.name, w.json});
    } else {
      view.workloads.push_back(WorkloadOf(w));
    }
  }
  for (const plan_document::Cell& c : doc->cells) {
    PlannedCell cell;
    cell.label = c.label;
    if (!c.axis.empty()) {
      cell.axis = c.axis;
      cell.value = c.value ? plan_document::ScalarText(*c.value) : "";
    }
    for (const auto& [axis, value] : c.changes) {
      cell.changes.emplace_back(axis, plan_document::ScalarText(value));
    }
    cell.round = static_cast<int>(c.round);
    view.cells.push_back(std::move(cell));
  }
  if (doc->bisect) {
    view.bisect = PlannedBisect{doc->bisect->axes, doc->bisect->tolerance,
                                static_cast<int>(doc->bisect->max_rounds)};
  }
  ORCH_RETURN_IF_ERROR(Jobs(*doc, view));
  return view;
}

}  // namespace orch::report
