// WritePlanJson: the document in the key order of docs/plan-json.md.
#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using Json = nlohmann::ordered_json;

Json ScalarPlanJson(const Scalar& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

// A Coordinate or a CoordinateView.
template <typename Pairs>
Json CoordinateJson(const Pairs& coordinate) {
  Json out = Json::object();
  for (const auto& [axis, value] : coordinate) out[axis] = ScalarPlanJson(value);
  return out;
}

Json ModelJson(const Model& model) {
  Json out = {{"name", model.name}};
  if (!model.synth.empty()) {
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
  Json out = {{"name", w.name}, {"kind", w.kind}, {"digest", w.digest}};
  if (w.prompt) out["prompt"] = *w.prompt;
  if (w.max_tokens) out["max_tokens"] = *w.max_tokens;
  if (w.positions) out["positions"] = *w.positions;
  if (w.tokens) out["tokens"] = *w.tokens;
  if (w.text) out["text"] = *w.text;
  if (!w.text_file.empty()) out["text_file"] = w.text_file;
  if (w.context) out["context"] = *w.context;
  if (w.continuation) out["continuation"] = *w.continuation;
  if (w.messages) {
    Json messages = Json::array();
    for (const ChatMessage& m : *w.messages)
      messages.push_back({{"role", m.role}, {"content", m.content}});
    out["messages"] = messages;
  }
  if (!w.cases_file.empty()) out["cases_file"] = w.cases_file;
  if (w.cases) out["cases"] = *w.cases;
  if (w.task) {
    Json task = {{"workload", w.task->workload}, {"case", w.task->case_id}};
    if (w.task->choice) task["choice"] = *w.task->choice;
    out["task"] = task;
  }
  if (w.capture) {
    Json capture = Json::object();
    if (w.capture->top_logits) capture["top_logits"] = *w.capture->top_logits;
    if (w.capture->full_every) capture["full_every"] = *w.capture->full_every;
    if (w.capture->full_row_budget_bytes)
      capture["full_row_budget_bytes"] = *w.capture->full_row_budget_bytes;
    if (w.capture->full_windows) {
      Json windows = Json::array();
      for (const auto& [begin, end] : *w.capture->full_windows) windows.push_back({begin, end});
      capture["full_windows"] = windows;
    }
    out["capture"] = capture;
  }
  return out;
}

Json AxesJson(const std::vector<Axis>& axes) {
  Json out = Json::array();
  for (const Axis& axis : axes) {
    Json alternatives = Json::array();
    for (const Scalar& v : axis.alternatives) alternatives.push_back(ScalarPlanJson(v));
    out.push_back({{"name", axis.name},
                   {"baseline", ScalarPlanJson(axis.baseline)},
                   {"alternatives", alternatives},
                   {"applies_to", axis.applies_to}});
  }
  return out;
}

Json RequirementsJson(const Document& document, std::uint32_t index) {
  if (index == kNone) return nullptr;
  const Requirements& r = document.requirements[index];
  return {{"engine", r.engine}, {"hardware", r.hardware}, {"gpus", r.gpus}, {"model", r.model}};
}

Json CellJson(const Document& document, const Cell& cell) {
  Json out = {{"label", cell.label}, {"axis", nullptr}, {"value", nullptr}};
  if (!cell.axis.empty()) out["axis"] = cell.axis;
  if (cell.value) out["value"] = ScalarPlanJson(*cell.value);
  if (!cell.changes.empty()) out["changes"] = CoordinateJson(cell.changes);
  if (cell.round > 0) out["round"] = cell.round;
  out["jobs"] = cell.jobs;
  out["requirements"] = RequirementsJson(document, cell.requirements);
  return out;
}

Json JobPlanJson(const Document& document, const Job& job) {
  return {{"id", job.id},
          {"cell", job.cell},
          {"workload",
           job.workload == kNone ? job.unknown_workload : document.workloads[job.workload].name},
          {"kind", job.kind},
          {"repeat", job.repeat},
          {"coordinate", job.coordinate == kNone
                             ? Json::object()
                             : CoordinateJson(document.coordinates[job.coordinate])},
          {"requirements", RequirementsJson(document, job.requirements)}};
}

Json WarningsJson(const std::vector<Diagnostic>& list) {
  Json out = Json::array();
  for (const Diagnostic& d : list) {
    out.push_back({{"file", d.file},
                   {"line", d.line},
                   {"column", d.column},
                   {"field", d.field},
                   {"message", d.message},
                   {"text", d.text}});
  }
  return out;
}

}  // namespace

std::string WriteModelJson(const Model& model) { return ModelJson(model).dump(); }

std::string WritePlanJson(const Document& document) {
  Json cells = Json::array();
  for (const Cell& cell : document.cells) cells.push_back(CellJson(document, cell));
  Json jobs = Json::array();
  for (const Job& job : document.jobs) jobs.push_back(JobPlanJson(document, job));
  Json workloads = Json::array();
  for (const Workload& w : document.workloads) workloads.push_back(WorkloadJson(w));
  Json out = {
      {"schema", kPlanSchema},
      {"spec", document.spec},
      {"experiment", {{"name", document.experiment}, {"description", document.description}}}};
  if (document.model) out["model"] = ModelJson(*document.model);
  if (document.baseline) out["baseline"] = CoordinateJson(*document.baseline);
  out["axes"] = AxesJson(document.axes);
  out["workloads"] = workloads;
  out["repeats"] = {{"baseline", document.baseline_repeats}, {"cells", document.cell_repeats}};
  out["summary"] = {{"axes_varied", document.axes_varied},
                    {"cells", document.cells.size()},
                    {"workloads", document.workloads.size()},
                    {"jobs", document.jobs.size()}};
  out["cells"] = cells;
  out["jobs"] = jobs;
  out["warnings"] = WarningsJson(document.warnings);
  if (document.bisect) {
    out["bisect"] = {{"axes", document.bisect->axes},
                     {"tolerance", document.bisect->tolerance},
                     {"max_rounds", document.bisect->max_rounds}};
  }
  return out.dump(2) + "\n";
}

}  // namespace orch::plan_document
