#include "report/task_tables.h"

#include <algorithm>
#include <cmath>

namespace orch::report {
namespace {

std::string TaskCount(std::uint64_t n) { return std::to_string(n); }

std::string TaskMargin(double v) { return FormatNumber(v, 4); }

// "0.06170 n=40": a pooled KLD (no interval: the cases' positions are not one series).
std::string TaskKld(double mean, std::uint64_t n) {
  return n == 0 || std::isnan(mean) ? "-" : FormatKld(mean) + " n=" + std::to_string(n);
}

Token TaskToken(std::int32_t id, const std::optional<std::string>& text) { return {id, text}; }

std::string TaskTokenShown(std::int32_t id, const std::optional<std::string>& text) {
  return id < 0 ? "(generation ended)" : FormatToken(TaskToken(id, text));
}

std::string TaskContext(const TaskPostMortem& p) {
  // A departure within the first tokens: the prompt's end is the context that matters.
  std::string out = "\"" + std::string(p.prompt_cut ? "..." : "") + p.prompt_tail;
  for (std::size_t i = 0; i < p.context.size(); ++i) {
    out += TokenText(TaskToken(p.context[i], p.context_text[i]));
  }
  return out + "\"";
}

std::string TaskStatusText(const TaskCellReport& c) {
  return c.status == "compared" ? "ok" : c.status + ": " + c.reason;
}

std::string TaskChangeName(TaskChangeKind kind) {
  switch (kind) {
    case TaskChangeKind::kNearTie:
      return "near-tie";
    case TaskChangeKind::kRealMargin:
      return "real margin";
    case TaskChangeKind::kUnknownMargin:
      return "margin unknown";
    case TaskChangeKind::kNone:
      break;
  }
  return "-";
}

std::vector<std::string> TaskPassRow(const TaskCellReport& c, bool baseline, bool choices) {
  const Estimate& e = c.pass_rate;
  std::vector<std::string> row{c.cell.label, FormatEstimate(e.mean, e.n, e.ci95, FormatPercent),
                               std::to_string(c.cases) + " / " + std::to_string(c.cases_planned),
                               std::to_string(c.repeats)};
  if (baseline) {
    row.insert(row.end(), {"-", "-", "-"});
  } else {
    row.push_back(TaskCount(c.changed) + " (" + TaskCount(c.near_tie) + " / " +
                  TaskCount(c.real_margin) + " / " + TaskCount(c.unknown_margin) + ")");
    row.push_back(TaskCount(c.broken) + " / " + TaskCount(c.fixed));
    row.push_back(TaskCount(c.unstable));
  }
  if (choices) row.push_back(baseline ? "-" : TaskCount(c.choice_changes));
  row.push_back(baseline ? "-" : TaskKld(c.kld_mean, c.kld_n));
  row.push_back(
      c.distance_n == 0 ? "-" : FormatNumber(c.distance_mean, 4) + " n=" + TaskCount(c.distance_n));
  std::string templates;
  for (const std::string& sha : c.chat_templates) {
    templates += (templates.empty() ? "" : ", ") + sha.substr(0, 12);
  }
  row.push_back(templates.empty() ? "-" : templates);
  row.push_back(TaskStatusText(c));
  return row;
}

std::string TaskChoiceText(const TaskCaseRun& r) {
  return std::to_string(r.chosen) + " (margin " + TaskMargin(r.choice_margin) + ")";
}

}  // namespace

std::string TaskOutcomeText(const TaskCaseOutcome& o) {
  if (!o.has_outcome()) return "-";
  return o.pass() ? "pass" : "fail";
}

std::string TaskPostMortemText(const TaskPostMortem& p) {
  return "token " + TaskCount(p.index + 1) + " after " + TaskContext(p) + ": " +
         TaskTokenShown(p.baseline_token, p.baseline_text) + " (margin " +
         TaskMargin(p.baseline_margin) + ") -> " + TaskTokenShown(p.cell_token, p.cell_text) +
         " (margin " + TaskMargin(p.cell_margin) + "); " +
         (p.near_tie ? "near-tie" : "real margin") + " (noise band " + TaskMargin(p.noise_band) +
         ")";
}

std::string TaskChoiceChangeText(const TaskCaseOutcome& base, const TaskCaseOutcome& cell) {
  const TaskCaseRun& b = base.runs.front();
  const TaskCaseRun& c = cell.runs.front();
  return "choice " + std::to_string(b.chosen) + " (margin " + TaskMargin(b.choice_margin) +
         ") -> choice " + std::to_string(c.chosen) + " (margin " + TaskMargin(c.choice_margin) +
         "); " + TaskChangeName(cell.change) + " (noise band " +
         TaskMargin(cell.choice_noise_band) + ")";
}

std::string TaskFailedCheck(const TaskCaseOutcome& base, const TaskCaseOutcome& cell) {
  if (cell.has_outcome() && !cell.pass()) return "cell: " + cell.runs.front().reason;
  if (base.has_outcome() && !base.pass()) return "baseline: " + base.runs.front().reason;
  return "-";
}

const TaskCaseOutcome* TaskBaselineOutcome(const TaskWorkloadReport& task, const std::string& id) {
  for (const TaskCaseOutcome& o : task.baseline.outcomes) {
    if (o.id == id) return o.has_outcome() ? &o : nullptr;
  }
  return nullptr;
}

Table TaskPassRateTable(const TaskWorkloadReport& w) {
  Table t{
      "Pass rate (every repeat of every case; 95% Wilson interval) and outcome changes "
      "against the baseline (near-tie / real margin / margin unknown)",
      {"cell", "pass rate [95% CI] n", "cases", "repeats", "outcome changes", "broken / fixed",
       "unstable baseline", "choice changes", "KLD pooled n", "ordinal distance n", "chat template",
       "status"},
      {}};
  if (!w.multiple_choice) t.header.erase(t.header.begin() + 7);
  t.rows.push_back(TaskPassRow(w.baseline, true, w.multiple_choice));
  for (const TaskCellReport& c : w.cells) {
    t.rows.push_back(TaskPassRow(c, false, w.multiple_choice));
  }
  // The chat template column only when some run rendered messages with one, the distance
  // only when some check gave one.
  for (std::size_t back : {3, 2}) {
    const auto column = static_cast<std::ptrdiff_t>(t.header.size() - back);
    if (std::all_of(t.rows.begin(), t.rows.end(),
                    [column](const auto& row) { return row[column] == "-"; })) {
      t.header.erase(t.header.begin() + column);
      for (auto& row : t.rows) row.erase(row.begin() + column);
    }
  }
  return t;
}

Table TaskChangeTable(const TaskWorkloadReport& w) {
  Table t{
      "Changed cases (the baseline stable on them) and their post-mortems: the first "
      "generated token where the cell departs from the baseline; margin: top-1 minus "
      "top-2 logit there (multiple choice: best minus second choice loglik)",
      {"cell", "case", "baseline", "cell outcome", "token", "context", "baseline token",
       "cell token", "baseline margin", "cell margin", "noise band", "kind", "failed check"},
      {}};
  for (const TaskCellReport& c : w.cells) {
    for (const TaskCaseOutcome& o : c.outcomes) {
      if (!o.changed || o.baseline_unstable) continue;
      const TaskCaseOutcome* base = TaskBaselineOutcome(w, o.id);
      std::vector<std::string> row{c.cell.label, o.id, TaskOutcomeText(*base), TaskOutcomeText(o)};
      if (const auto& p = o.post_mortem) {
        row.insert(row.end(),
                   {TaskCount(p->index + 1), TaskContext(*p),
                    TaskTokenShown(p->baseline_token, p->baseline_text),
                    TaskTokenShown(p->cell_token, p->cell_text), TaskMargin(p->baseline_margin),
                    TaskMargin(p->cell_margin), TaskMargin(p->noise_band)});
      } else if (!o.runs.front().logliks.empty()) {
        const TaskCaseRun& b = base->runs.front();
        const TaskCaseRun& r = o.runs.front();
        row.insert(row.end(), {"-", "-", "choice " + std::to_string(b.chosen),
                               "choice " + std::to_string(r.chosen), TaskMargin(b.choice_margin),
                               TaskMargin(r.choice_margin), TaskMargin(o.choice_noise_band)});
      } else {
        row.insert(row.end(), {"-", o.note, "-", "-", "-", "-", "-"});
      }
      row.push_back(TaskChangeName(o.change));
      row.push_back(TaskFailedCheck(*base, o));
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

Table TaskUnstableTable(const TaskWorkloadReport& w) {
  Table t{
      "Changed cases the baseline itself flips on (its repeats disagree): not counted as "
      "outcome changes",
      {"cell", "case", "baseline repeats passing", "cell outcome", "failed check"},
      {}};
  for (const TaskCellReport& c : w.cells) {
    for (const TaskCaseOutcome& o : c.outcomes) {
      if (!o.changed || !o.baseline_unstable) continue;
      const TaskCaseOutcome* base = TaskBaselineOutcome(w, o.id);
      t.rows.push_back({c.cell.label, o.id,
                        std::to_string(base->passes()) + " / " + std::to_string(base->runs.size()),
                        TaskOutcomeText(o), TaskFailedCheck(*base, o)});
    }
  }
  return t;
}

Table TaskChoiceTable(const TaskWorkloadReport& w) {
  Table t{
      "Multiple choice: the choice each cell picks by summed continuation log-likelihood "
      "(margin: best minus second)",
      {"case", "answer", w.baseline.cell.label},
      {}};
  for (const TaskCellReport& c : w.cells) t.header.push_back(c.cell.label);
  for (std::size_t i = 0; i < w.baseline.outcomes.size(); ++i) {
    const TaskCaseOutcome& b = w.baseline.outcomes[i];
    if (b.answer < 0) continue;
    std::vector<std::string> row{b.id, std::to_string(b.answer),
                                 b.has_outcome() ? TaskChoiceText(b.runs.front()) : "-"};
    for (const TaskCellReport& c : w.cells) {
      const TaskCaseOutcome& o = c.outcomes[i];
      std::string text = o.has_outcome() ? TaskChoiceText(o.runs.front()) : "-";
      if (o.changed) text += " *";
      row.push_back(text);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table OutcomeAttributionTable(const Report& r) {
  Table t{"Attribution by task outcome changes (strongest cell per axis; ties by pooled KLD)",
          {"rank", "by outcome changes", "changes (near-tie / real margin)", "unstable baseline",
           "pass rate change", "KLD pooled n"},
          {}};
  for (std::size_t i = 0; i < r.by_outcome_changes.size(); ++i) {
    const OutcomeRank& k = r.by_outcome_changes[i];
    const std::string delta = std::isnan(k.pass_rate_delta) ? "-"
                                                            : (k.pass_rate_delta > 0 ? "+" : "") +
                                                                  FormatPercent(k.pass_rate_delta);
    t.rows.push_back({std::to_string(i + 1), k.cell + " (" + k.workload + ")",
                      TaskCount(k.changed) + " of " + std::to_string(k.cases) + " (" +
                          TaskCount(k.near_tie) + " / " + TaskCount(k.real_margin) + ")",
                      TaskCount(k.unstable), delta, TaskKld(k.kld_mean, k.kld_n)});
  }
  return t;
}

}  // namespace orch::report
