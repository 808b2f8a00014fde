#include "report/task_json.h"

#include <cmath>

namespace orch::report {
namespace {

using TaskJsonValue = nlohmann::json;

TaskJsonValue TaskJsonNum(double v) {
  return std::isfinite(v) ? TaskJsonValue(v) : TaskJsonValue(nullptr);
}

TaskJsonValue TaskJsonText(const std::optional<std::string>& text) {
  return text ? TaskJsonValue(*text) : TaskJsonValue(nullptr);
}

TaskJsonValue TaskJsonToken(std::int32_t id, const std::optional<std::string>& text) {
  if (id < 0) return nullptr;  // that side's generation had ended
  return {{"id", id}, {"text", TaskJsonText(text)}};
}

TaskJsonValue TaskJsonEstimate(const Estimate& e) {
  return {{"mean", TaskJsonNum(e.mean)},
          {"n", e.n},
          {"ci95", e.ci95.available() ? TaskJsonValue{e.ci95.lo, e.ci95.hi} : TaskJsonValue()},
          {"ci95_method", e.ci95.method}};
}

TaskJsonValue TaskJsonPostMortem(const TaskPostMortem& p) {
  TaskJsonValue context = TaskJsonValue::array();
  for (std::size_t i = 0; i < p.context.size(); ++i) {
    context.push_back(TaskJsonToken(p.context[i], p.context_text[i]));
  }
  TaskJsonValue out = {{"index", p.index},
                       {"position", p.position},
                       {"baseline_token", TaskJsonToken(p.baseline_token, p.baseline_text)},
                       {"cell_token", TaskJsonToken(p.cell_token, p.cell_text)},
                       {"context", context},
                       {"baseline_margin", TaskJsonNum(p.baseline_margin)},
                       {"cell_margin", TaskJsonNum(p.cell_margin)},
                       {"noise_band", p.noise_band},
                       {"near_tie", p.near_tie}};
  // Only when there is one: reports of cases without a known prompt keep their shape.
  if (!p.prompt_tail.empty()) out["prompt_tail"] = p.prompt_tail;
  return out;
}

TaskJsonValue TaskJsonRun(const TaskCaseRun& r) {
  TaskJsonValue out{{"repeat", r.repeat},
                    {"runs", r.runs},
                    {"pass", r.pass},
                    {"reason", r.reason.empty() ? TaskJsonValue() : TaskJsonValue(r.reason)},
                    {"distance", r.distance ? TaskJsonValue(*r.distance) : TaskJsonValue()}};
  if (r.logliks.empty()) {
    out["text"] = r.text;
  } else {
    TaskJsonValue logliks = TaskJsonValue::array();
    for (double v : r.logliks) logliks.push_back(TaskJsonNum(v));
    out["chosen"] = r.chosen;
    out["logliks"] = logliks;
    out["choice_margin"] = TaskJsonNum(r.choice_margin);
  }
  return out;
}

TaskJsonValue TaskJsonOutcome(const TaskCaseOutcome& o) {
  TaskJsonValue runs = TaskJsonValue::array();
  for (const TaskCaseRun& r : o.runs) runs.push_back(TaskJsonRun(r));
  return {{"case", o.id},
          {"answer", o.answer >= 0 ? TaskJsonValue(o.answer) : TaskJsonValue()},
          {"pass", o.has_outcome() ? TaskJsonValue(o.pass()) : TaskJsonValue()},
          {"passes", o.passes()},
          {"repeats_agree", o.repeats_agree()},
          {"missing", o.missing.empty() ? TaskJsonValue() : TaskJsonValue(o.missing)},
          {"changed", o.changed},
          {"baseline_unstable", o.baseline_unstable},
          {"change", std::string(TaskChangeKindName(o.change))},
          {"post_mortem", o.post_mortem ? TaskJsonPostMortem(*o.post_mortem) : TaskJsonValue()},
          {"choice_noise_band", TaskJsonNum(o.choice_noise_band)},
          {"note", o.note.empty() ? TaskJsonValue() : TaskJsonValue(o.note)},
          {"runs", runs}};
}

TaskJsonValue TaskJsonCell(const TaskCellReport& c) {
  TaskJsonValue outcomes = TaskJsonValue::array();
  for (const TaskCaseOutcome& o : c.outcomes) outcomes.push_back(TaskJsonOutcome(o));
  return {{"label", c.cell.label},
          {"axis", c.cell.is_baseline() ? TaskJsonValue() : TaskJsonValue(c.cell.axis)},
          {"value", c.cell.is_baseline() ? TaskJsonValue() : TaskJsonValue(c.cell.value)},
          {"status", c.status},
          {"reason", c.reason},
          {"cases_planned", c.cases_planned},
          {"cases", c.cases},
          {"repeats", c.repeats},
          {"trials", c.trials},
          {"passes", c.passes},
          {"pass_rate", TaskJsonEstimate(c.pass_rate)},
          {"outcome_changes",
           {{"changed", c.changed},
            {"near_tie", c.near_tie},
            {"real_margin", c.real_margin},
            {"unknown_margin", c.unknown_margin},
            {"unstable", c.unstable},
            {"broken", c.broken},
            {"fixed", c.fixed},
            {"choice_changes", c.choice_changes}}},
          {"kld", {{"mean", TaskJsonNum(c.kld_mean)}, {"n", c.kld_n}}},
          {"chat_templates", c.chat_templates},
          {"ordinal_distance", {{"mean", TaskJsonNum(c.distance_mean)}, {"n", c.distance_n}}},
          {"cases_detail", outcomes}};
}

}  // namespace

nlohmann::json TasksJson(const std::vector<TaskWorkloadReport>& tasks) {
  TaskJsonValue out = TaskJsonValue::array();
  for (const TaskWorkloadReport& w : tasks) {
    TaskJsonValue cells = TaskJsonValue::array();
    for (const TaskCellReport& c : w.cells) cells.push_back(TaskJsonCell(c));
    out.push_back({{"name", w.name},
                   {"multiple_choice", w.multiple_choice},
                   {"error", w.error.empty() ? TaskJsonValue() : TaskJsonValue(w.error)},
                   {"baseline", TaskJsonCell(w.baseline)},
                   {"cells", cells}});
  }
  return out;
}

nlohmann::json OutcomeRanksJson(const std::vector<OutcomeRank>& ranks) {
  TaskJsonValue out = TaskJsonValue::array();
  for (const OutcomeRank& k : ranks) {
    out.push_back({{"axis", k.axis},
                   {"cell", k.cell},
                   {"workload", k.workload},
                   {"changed", k.changed},
                   {"near_tie", k.near_tie},
                   {"real_margin", k.real_margin},
                   {"unstable", k.unstable},
                   {"cases", k.cases},
                   {"pass_rate_delta", TaskJsonNum(k.pass_rate_delta)},
                   {"kld_mean", TaskJsonNum(k.kld_mean)},
                   {"kld_n", k.kld_n}});
  }
  return out;
}

}  // namespace orch::report
