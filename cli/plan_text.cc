#include "cli/plan_text.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "bisect/bisect.h"
#include "planner/job_id.h"

namespace orch::cli {
namespace {

using planner::Plan;

std::string Ellipsize(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 3) + "...";
}

std::string Pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string BaselineLine(const Plan& plan) {
  std::string out;
  for (const planner::Axis& axis : plan.spec.axes) {
    out += (out.empty() ? "" : " ") + axis.name + "=" + axis.baseline.ToText();
  }
  return out;
}

// Varied axes in cell order, each with its number of alternatives.
std::string AxesLine(const Plan& plan) {
  std::string names;
  int varied = 0;
  for (const planner::Cell& cell : plan.cells) {
    if (cell.alternative != 0) continue;  // the baseline, or not an axis's first cell
    const planner::Axis& axis = plan.spec.axes[cell.axis];
    ++varied;
    names += (names.empty() ? "" : ", ") + axis.name + " (" +
             std::to_string(axis.alternatives.size()) + ")";
  }
  return std::to_string(varied) + " varied" + (names.empty() ? "" : ": " + names);
}

// A task workload shows as one entry with its case count and the jobs its cases run as,
// not as one entry per case.
std::string TaskEntry(const Plan& plan, const planner::TaskWorkload& task) {
  int generate = 0, choices = 0, cases = 0, most_tokens = 0;
  std::string last_case;
  for (const planner::Workload& w : plan.spec.workloads) {
    if (!w.task || w.task->workload != task.name) continue;
    if (w.task->case_id != last_case) ++cases;
    last_case = w.task->case_id;
    if (w.kind == planner::WorkloadKind::kGenerate) {
      ++generate;
      most_tokens = std::max(most_tokens, w.max_tokens);
    } else {
      ++choices;
    }
  }
  std::string out =
      task.name + " (task " + task.cases_file + ", " + std::to_string(cases) + " cases: ";
  if (generate > 0) {
    out += std::to_string(generate) + " generate up to " + std::to_string(most_tokens) + " tokens";
  }
  if (choices > 0)
    out += std::string(generate > 0 ? ", " : "") + std::to_string(choices) + " choices";
  return out + ")";
}

std::string WorkloadsLine(const Plan& plan) {
  std::size_t shown = plan.spec.tasks.size();
  for (const planner::Workload& w : plan.spec.workloads) shown += w.task ? 0 : 1;
  std::string out = std::to_string(shown);
  char sep = ':';
  for (const planner::Workload& w : plan.spec.workloads) {
    if (w.task) continue;
    bool generate = w.kind == planner::WorkloadKind::kGenerate;
    out += std::string(1, sep) + " " + w.name + " (" + planner::WorkloadKindName(w.kind) + ", " +
           (generate ? std::to_string(w.max_tokens) + " tokens"
                     : std::to_string(w.positions) + " positions") +
           ")";
    sep = ',';
  }
  for (const planner::TaskWorkload& t : plan.spec.tasks) {
    out += std::string(1, sep) + " " + TaskEntry(plan, t);
    sep = ',';
  }
  return out;
}

// "llama.cpp@b8390 cpu sha256:3e4cb1417446" or "vllm@0.11 gpu:h100 gpus>=2 ...".
std::string RequiresText(const planner::Requirements& r) {
  std::string out = r.engine + " " + r.hardware;
  if (r.gpus > 0) out += " gpus>=" + std::to_string(r.gpus);
  bool sha = r.model.starts_with("sha256:");
  return out + " " + (sha ? r.model.substr(0, 7 + 12) : Ellipsize(r.model, 28));
}

// A bisection: what `to` changes, the walk, and the cells of each round.
std::string BisectLines(const Plan& plan) {
  const planner::BisectSpec& b = *plan.spec.bisect;
  std::vector<std::string> names = plan.spec.BisectAxisNames();
  std::string changes;
  for (int axis : b.axes) {
    const planner::Axis& a = plan.spec.axes[axis];
    changes += (changes.empty() ? "" : " ") + a.name + "=" + a.alternatives.front().ToText();
  }
  char tolerance[32];
  std::snprintf(tolerance, sizeof tolerance, "%g%%", b.tolerance * 100);
  std::string walk;
  for (bisect::AxisSet step : bisect::Walk(static_cast<int>(names.size()))) {
    walk += (walk.empty() ? "" : " -> ") + bisect::SetLabel(names, step);
  }
  std::map<int, int> per_round;
  for (const planner::BisectCell& c : b.cells) ++per_round[c.round];
  std::string rounds;
  for (const auto& [round, cells] : per_round) {
    rounds += (rounds.empty() ? "" : ", ") + std::string("round ") + std::to_string(round) + ": " +
              std::to_string(cells);
  }
  return "To          " + changes + " (" + std::to_string(names.size()) +
         " axes differ)\nBisect      explained when a set of axes is sufficient and necessary "
         "within " +
         tolerance + " of KLD(to, from) or the repeat noise; at most " +
         std::to_string(b.max_rounds) + " rounds\nWalk        " + walk + "\nCells       " +
         std::to_string(plan.cells.size()) + " (from + " + rounds + ")\n";
}

std::string Summary(const Plan& plan) {
  std::string out;
  std::string title = plan.spec.name;
  if (!plan.spec.description.empty()) title += ": " + plan.spec.description;
  out += "Experiment  " + title + "\n";
  out += "Spec        " + plan.spec.file + "\n";
  out += "Model       " + plan.cells.front().requirements.model + "\n";
  if (plan.spec.bisect) {
    out += "From        " + BaselineLine(plan) + "\n" + BisectLines(plan);
  } else {
    out += "Baseline    " + BaselineLine(plan) + "\n";
    out += "Axes        " + AxesLine(plan) + "\n";
    out += "Cells       " + std::to_string(plan.cells.size()) + " (baseline + " +
           std::to_string(plan.cells.size() - 1) + ")\n";
  }
  out += "Workloads   " + WorkloadsLine(plan) + "\n";
  out += "Repeats     " + std::string(plan.spec.bisect ? "from and to x" : "baseline x") +
         std::to_string(plan.spec.baseline_repeats) + ", other cells x" +
         std::to_string(plan.spec.cell_repeats) + "\n";
  out += "Jobs        " + std::to_string(plan.jobs.size()) + "\n";
  return out;
}

std::string Table(const Plan& plan) {
  std::size_t cell_width = 8, workload_width = 8;
  for (const planner::Cell& c : plan.cells) cell_width = std::max(cell_width, c.label.size());
  for (const planner::Workload& w : plan.spec.workloads) {
    workload_width = std::max(workload_width, w.name.size());
  }
  cell_width = std::min<std::size_t>(cell_width, 40);
  std::string out = Pad("JOB", planner::kShortJobIdHexDigits + 1) + Pad("CELL", cell_width + 1) +
                    Pad("WORKLOAD", workload_width + 1) + "REPEAT  REQUIRES\n";
  for (const planner::Job& job : plan.jobs) {
    out += Pad(job.id.substr(0, planner::kShortJobIdHexDigits), planner::kShortJobIdHexDigits + 1);
    out += Pad(Ellipsize(plan.CellOf(job).label, cell_width), cell_width + 1);
    out += Pad(plan.WorkloadOf(job).name, workload_width + 1);
    out += Pad(std::to_string(job.repeat), 8);
    out += RequiresText(plan.CellOf(job).requirements) + "\n";
  }
  return out;
}

}  // namespace

std::string FormatPlanText(const Plan& plan) {
  std::string out = Summary(plan) + "\n" + Table(plan);
  if (!plan.warnings.empty()) out += "\n";
  for (const planner::Diagnostic& d : plan.warnings) out += d.Format(plan.spec.file) + "\n";
  return out;
}

}  // namespace orch::cli
