#include "report/task_render.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/strings.h"
#include "report/html_plot.h"
#include "report/task_tables.h"

namespace orch::report {
namespace {

std::string TaskCsvNum(double v) {
  if (std::isnan(v)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g", v);
  return buffer;
}

std::string TaskCsvCount(std::uint64_t n) { return std::to_string(n); }

std::vector<std::string> TaskCsvFields(const TaskCellReport& c) {
  const bool cell = !c.cell.is_baseline();
  auto when = [cell](std::uint64_t n) { return cell ? TaskCsvCount(n) : std::string(); };
  std::string changed;
  for (const TaskCaseOutcome& o : c.outcomes) {
    if (o.changed && !o.baseline_unstable) changed += (changed.empty() ? "" : ";") + o.id;
  }
  return {std::to_string(c.cases),
          std::to_string(c.cases_planned),
          std::to_string(c.repeats),
          TaskCsvCount(c.trials),
          TaskCsvCount(c.passes),
          TaskCsvNum(c.pass_rate.mean),
          TaskCsvNum(c.pass_rate.ci95.lo),
          TaskCsvNum(c.pass_rate.ci95.hi),
          when(c.changed),
          when(c.near_tie),
          when(c.real_margin),
          when(c.unknown_margin),
          when(c.unstable),
          when(c.broken),
          when(c.fixed),
          when(c.choice_changes),
          TaskCsvNum(c.kld_mean),
          when(c.kld_n),
          TaskCsvNum(c.distance_mean),
          TaskCsvCount(c.distance_n),
          changed};
}

std::string TaskBoxClass(const TaskCaseOutcome& o) {
  std::string klass = "case " + std::string(!o.has_outcome() ? "none" : o.pass() ? "pass" : "fail");
  if (o.changed) klass += o.baseline_unstable ? " unstable" : " changed";
  return klass;
}

std::string TaskBoxTitle(const TaskWorkloadReport& w, const TaskCaseOutcome& o) {
  std::string title = o.id + ": " + TaskOutcomeText(o);
  if (!o.has_outcome()) title += " (" + o.missing + ")";
  if (!o.changed) return title;
  const TaskCaseOutcome* base = TaskBaselineOutcome(w, o.id);
  title += ", baseline " + TaskOutcomeText(*base);
  if (o.baseline_unstable) return title + " (the baseline's own repeats disagree)";
  if (o.post_mortem) title += "; " + TaskPostMortemText(*o.post_mortem);
  if (!o.runs.front().logliks.empty()) title += "; " + TaskChoiceChangeText(*base, o);
  return title + "; failed check: " + TaskFailedCheck(*base, o);
}

void TaskWriteStrip(const TaskWorkloadReport& w, const TaskCellReport& c, std::ostringstream& out) {
  out << "<div class=\"task-strip\" data-task=\"" << EscapeHtml(w.name) << "\" data-cell=\""
      << EscapeHtml(c.cell.label) << "\"><span class=\"strip-label\">" << EscapeHtml(c.cell.label)
      << "</span><span class=\"strip-cases\">";
  for (const TaskCaseOutcome& o : c.outcomes) {
    out << "<span class=\"" << TaskBoxClass(o) << "\" data-case=\"" << EscapeHtml(o.id)
        << "\" title=\"" << EscapeHtml(TaskBoxTitle(w, o)) << "\"></span>";
  }
  out << "</span></div>\n";
  bool any = false;
  for (const TaskCaseOutcome& o : c.outcomes) {
    if (!o.changed || o.baseline_unstable) continue;
    if (!any) out << "<ul class=\"post-mortems\">\n";
    any = true;
    out << "<li data-case=\"" << EscapeHtml(o.id) << "\">" << EscapeHtml(TaskBoxTitle(w, o))
        << "</li>\n";
  }
  if (any) out << "</ul>\n";
}

}  // namespace

std::vector<std::string> TaskCsvColumns() {
  return {"task_cases",
          "task_cases_planned",
          "task_repeats",
          "task_trials",
          "task_passes",
          "pass_rate",
          "pass_rate_ci95_lo",
          "pass_rate_ci95_hi",
          "outcome_changes",
          "outcome_changes_near_tie",
          "outcome_changes_real_margin",
          "outcome_changes_unknown_margin",
          "outcome_changes_unstable",
          "outcome_broken",
          "outcome_fixed",
          "choice_changes",
          "task_kld_mean",
          "task_kld_n",
          "ordinal_distance_mean",
          "ordinal_distance_n",
          "changed_cases"};
}

std::vector<std::vector<std::string>> TaskCsvRows(const Report& r, std::size_t columns_before) {
  std::vector<std::vector<std::string>> rows;
  for (const TaskWorkloadReport& w : r.tasks) {
    std::vector<const TaskCellReport*> cells{&w.baseline};
    for (const TaskCellReport& c : w.cells) cells.push_back(&c);
    for (const TaskCellReport* c : cells) {
      std::vector<std::string> row{r.experiment,
                                   r.partial ? "true" : "false",
                                   w.name,
                                   "task",
                                   c->cell.label,
                                   c->cell.axis,
                                   c->cell.value,
                                   w.error.empty() ? c->status : "error",
                                   w.error.empty() ? c->reason : w.error};
      row.resize(columns_before);
      for (std::string& field : TaskCsvFields(*c)) row.push_back(std::move(field));
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string TaskStripsHtml(const TaskWorkloadReport& w) {
  std::ostringstream out;
  out << "<div class=\"task-strips\">\n";
  TaskWriteStrip(w, w.baseline, out);
  for (const TaskCellReport& c : w.cells) TaskWriteStrip(w, c, out);
  out << "</div>\n";
  return out.str();
}

}  // namespace orch::report
