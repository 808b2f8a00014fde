#include "report/plan_view.h"

#include <nlohmann/json.hpp>

namespace orch::report {
namespace {

using Json = nlohmann::json;

Status Field(const std::string& where, const std::string& what) {
  return InvalidArgument("plan JSON: " + where + ": " + what);
}

Result<std::string> Text(const Json& object, const char* key, const std::string& at) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return Field(at + key, "required string");
  return it->get<std::string>();
}

// Axis values are strings, numbers or booleans; shown as their JSON text, strings bare.
std::string ValueText(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::optional<std::uint64_t> Count(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0) {
    return std::nullopt;
  }
  return it->get<std::uint64_t>();
}

void ParseRequest(const Json& w, PlannedWorkload& workload) {
  if (workload.kind == WorkloadKind::kGenerate) {
    workload.max_tokens = Count(w, "max_tokens");
  } else {
    workload.positions = Count(w, "positions");
  }
  const Json capture = w.value("capture", Json::object());
  if (!capture.is_object()) return;
  workload.top_k = static_cast<int>(Count(capture, "top_k").value_or(0));
  workload.full_every = Count(capture, "full_every").value_or(0);
}

// The model and baseline are shown, never required: a plan without them still reports.
void ParseModelAndBaseline(const Json& doc, PlanView& view) {
  const Json model = doc.value("model", Json::object());
  if (model.is_object()) {
    view.model.name = model.value("name", std::string());
    if (model.contains("sha256") && model["sha256"].is_string()) {
      view.model.id = "sha256:" + model["sha256"].get<std::string>();
    } else if (model.contains("synth") && model["synth"].is_string()) {
      view.model.id = "synth:" + model["synth"].get<std::string>();
    }
  }
  const Json baseline = doc.value("baseline", Json::object());
  if (!baseline.is_object()) return;
  for (const auto& [axis, value] : baseline.items()) {
    view.baseline.emplace_back(axis, ValueText(value));
  }
}

Status ParseWorkloads(const Json& doc, PlanView& view) {
  auto it = doc.find("workloads");
  if (it == doc.end() || !it->is_array()) return Field("workloads", "required array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& w = (*it)[i];
    const std::string at = "workloads[" + std::to_string(i) + "].";
    if (!w.is_object()) return Field(at, "not an object");
    PlannedWorkload workload;
    ORCH_ASSIGN_OR_RETURN(workload.name, Text(w, "name", at));
    ORCH_ASSIGN_OR_RETURN(std::string kind, Text(w, "kind", at));
    workload.kind = kind == "generate" ? WorkloadKind::kGenerate : WorkloadKind::kTeacherForced;
    ParseRequest(w, workload);
    view.workloads.push_back(std::move(workload));
  }
  return Status();
}

Status ParseCells(const Json& doc, PlanView& view) {
  auto it = doc.find("cells");
  if (it == doc.end() || !it->is_array()) return Field("cells", "required array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& c = (*it)[i];
    const std::string at = "cells[" + std::to_string(i) + "].";
    if (!c.is_object()) return Field(at, "not an object");
    PlannedCell cell;
    ORCH_ASSIGN_OR_RETURN(cell.label, Text(c, "label", at));
    if (auto axis = c.find("axis"); axis != c.end() && axis->is_string()) {
      cell.axis = axis->get<std::string>();
      cell.value = ValueText(c.value("value", Json()));
    }
    view.cells.push_back(std::move(cell));
  }
  return Status();
}

Status ParseJobs(const Json& doc, PlanView& view) {
  auto it = doc.find("jobs");
  if (it == doc.end() || !it->is_array()) return Field("jobs", "required array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& j = (*it)[i];
    const std::string at = "jobs[" + std::to_string(i) + "].";
    if (!j.is_object()) return Field(at, "not an object");
    PlannedJob job;
    ORCH_ASSIGN_OR_RETURN(job.id, Text(j, "id", at));
    ORCH_ASSIGN_OR_RETURN(job.cell, Text(j, "cell", at));
    ORCH_ASSIGN_OR_RETURN(job.workload, Text(j, "workload", at));
    auto repeat = j.find("repeat");
    if (repeat == j.end() || !repeat->is_number_integer()) {
      return Field(at + "repeat", "required integer");
    }
    job.repeat = repeat->get<int>();
    view.jobs.push_back(std::move(job));
  }
  return Status();
}

}  // namespace

Result<PlanView> ParsePlanView(std::string_view json) {
  Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Field("document", "not a JSON object");
  if (doc.value("schema", std::string()) != "orch.plan/1") {
    return Field("schema", "expected \"orch.plan/1\"");
  }
  PlanView view;
  auto experiment = doc.find("experiment");
  if (experiment == doc.end() || !experiment->is_object()) {
    return Field("experiment", "required object");
  }
  ORCH_ASSIGN_OR_RETURN(view.experiment, Text(*experiment, "name", "experiment."));
  ParseModelAndBaseline(doc, view);
  ORCH_RETURN_IF_ERROR(ParseWorkloads(doc, view));
  ORCH_RETURN_IF_ERROR(ParseCells(doc, view));
  ORCH_RETURN_IF_ERROR(ParseJobs(doc, view));
  return view;
}

}  // namespace orch::report
