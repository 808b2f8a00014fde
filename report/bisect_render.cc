#include "report/bisect_render.h"

namespace orch::report {
namespace {

using BisectJsonValue = nlohmann::ordered_json;

std::string Kld(const std::optional<double>& value) { return value ? FormatKld(*value) : "-"; }

std::string Label(const BisectReport& r, bisect::AxisSet set) {
  return bisect::SetLabel(r.plan.axes, set);
}

const BisectCellReport* CellOf(const BisectReport& r, bisect::AxisSet set) {
  for (const BisectCellReport& c : r.cells)
    if (c.set == set) return &c;
  return nullptr;
}

// "256 positions (exact on 256) of kjv-heldout": what KLD(to, from) rests on.
std::string Basis(const BisectReport& r) {
  const BisectCellReport* to = CellOf(r, bisect::Everything(static_cast<int>(r.plan.axes.size())));
  std::string workloads;
  for (const std::string& w : r.workloads) workloads += (workloads.empty() ? "" : ", ") + w;
  std::string rounds = std::to_string(r.rounds) + (r.rounds == 1 ? " round" : " rounds") + ", " +
                       std::to_string(r.cells.size()) + " cells";
  if (to == nullptr || !to->measure.from) return rounds + "; workloads " + workloads;
  const bisect::Distance& d = *to->measure.from;
  return "KLD(to, from) rests on " + std::to_string(d.positions) + " positions (exact on " +
         std::to_string(d.exact_positions) + ") of " + workloads + "; " + std::to_string(d.flips) +
         " top-1 flips" +
         (d.first_flip ? ", the first at position " + std::to_string(*d.first_flip) : "") + "; " +
         rounds;
}

std::string Threshold(const BisectReport& r) {
  const bisect::Verdict& v = r.verdict;
  return "threshold " + FormatKld(v.threshold) + " = max(" +
         FormatNumber(r.plan.tolerance * 100, 3) + "% of KLD(to, from) " + FormatKld(v.total) +
         ", repeat noise " + FormatKld(v.noise) +
         (v.noise_known ? "" : ", not measured: from or to ran once") + ")";
}

std::string Cells(const BisectReport& r, const std::vector<bisect::AxisSet>& sets) {
  std::string out;
  for (bisect::AxisSet s : sets) out += (out.empty() ? "" : "; ") + Label(r, s);
  return out;
}

std::vector<std::string> AxesOf(const BisectReport& r, bisect::AxisSet set) {
  std::vector<std::string> out;
  for (int i = 0; i < static_cast<int>(r.plan.axes.size()); ++i)
    if (bisect::HasAxis(set, i)) out.push_back(r.plan.axes[i]);
  return out;
}

// "80.00% [49.02%, 94.33%] n=10", or the cell's status when it has no outcome.
std::string PassRate(const BisectTaskRow& row) {
  if (row.pass_rate.n == 0) return row.status == "compared" ? "-" : row.status;
  return FormatEstimate(row.pass_rate.mean, row.pass_rate.n, row.pass_rate.ci95, FormatPercent);
}

// Why KLD(to, from) is missing: to's own reason first, else from's, else the first cell's.
std::string Missing(const BisectReport& r) {
  const bisect::AxisSet all = bisect::Everything(static_cast<int>(r.plan.axes.size()));
  for (bisect::AxisSet end : {all, bisect::AxisSet{0}}) {
    const BisectCellReport* c = CellOf(r, end);
    if (c != nullptr && !c->missing.empty()) return "cell " + c->label + ": " + c->missing;
  }
  for (const BisectCellReport& c : r.cells)
    if (!c.missing.empty()) return "cell " + c.label + ": " + c.missing;
  return "";
}

// The verdict in one sentence.
std::string VerdictLine(const BisectReport& r) {
  const bisect::Verdict& v = r.verdict;
  const bisect::AxisSet all = bisect::Everything(static_cast<int>(r.plan.axes.size()));
  switch (v.kind) {
    case bisect::VerdictKind::kUnmeasured: {
      std::string missing = Missing(r);
      return "bisection: not measured yet: KLD(to, from) needs finished runs of both" +
             (missing.empty() ? std::string() : " (" + missing + ")");
    }
    case bisect::VerdictKind::kAgree:
      return "bisection: from and to agree: KLD(to, from) " + FormatKld(v.total) +
             (v.total == 0.0 ? "" : " is within their repeat noise " + FormatKld(v.noise)) +
             "; nothing to explain";
    case bisect::VerdictKind::kExplained: {
      std::string what;
      for (const std::string& axis : AxesOf(r, v.explaining))
        what += (what.empty() ? "" : " + ") + axis;
      if (v.explaining == all && r.plan.axes.size() > 1) {
        what = "every axis together (no smaller set does)";
      }
      return "bisection: " + what + " explains the divergence: " + Label(r, v.explaining) +
             " matches to within " + Kld(v.sufficient_residual) + " and " +
             Label(r, all & ~v.explaining) + " matches from within " + Kld(v.necessary_residual) +
             " (" + Threshold(r) + ")";
    }
    case bisect::VerdictKind::kSearching:
      return "bisection: not attributed yet after round " + std::to_string(r.rounds) + " (" +
             Threshold(r) + "); " +
             (v.next.empty() ? "" : "the next round measures " + Cells(r, v.next)) +
             (v.next.empty() || v.repeat.empty() ? "" : "; ") +
             (v.repeat.empty() ? "" : "a second repeat of " + Cells(r, v.repeat)) +
             " (orch bisect runs it)";
    case bisect::VerdictKind::kExhausted:
      return "bisection: no set of the axes that moved a distribution explains the "
             "divergence (" +
             Threshold(r) +
             "); what remains depends on axes that moved nothing alone nor when left "
             "out of to, or on the hosts (docs/bisect.md)";
  }
  return "";
}

// One line per task: its pass rates at both ends and the cases that change outcome.
void TaskLines(const BisectReport& r, std::vector<std::string>& out) {
  for (const BisectTaskRow& from : r.tasks) {
    if (from.cell != "from") continue;
    for (const BisectTaskRow& to : r.tasks) {
      if (to.cell != "to" || to.workload != from.workload) continue;
      out.push_back("task " + from.workload + ": from passes " + PassRate(from) + ", to " +
                    PassRate(to) + "; " + std::to_string(to.changed) + " of " +
                    std::to_string(to.cases) + " cases change outcome from from to to (" +
                    std::to_string(to.near_tie) + " after a near-tie; " +
                    std::to_string(to.broken) + " broken, " + std::to_string(to.fixed) + " fixed)");
    }
  }
}

}  // namespace

std::vector<std::string> BisectVerdictLines(const BisectReport& r) {
  std::vector<std::string> out{VerdictLine(r)};
  for (const bisect::Interaction& i : r.verdict.interactions) {
    out.push_back("interaction: " + i.text);
  }
  out.push_back(Basis(r));
  TaskLines(r, out);
  return out;
}

Table BisectTaskTable(const BisectReport& r) {
  Table t{"bisection: task outcomes per cell (changes against from)",
          {"cell", "task", "pass rate [95% CI] n", "changed", "near-tie", "broken", "fixed"},
          {}};
  for (const BisectTaskRow& row : r.tasks) {
    const bool from = row.cell == "from";
    t.rows.push_back(
        {row.cell, row.workload, PassRate(row), from ? "-" : std::to_string(row.changed),
         from ? "-" : std::to_string(row.near_tie), from ? "-" : std::to_string(row.broken),
         from ? "-" : std::to_string(row.fixed)});
  }
  return t;
}

Table BisectAxisTable(const BisectReport& r) {
  Table t{"bisection: each axis alone from from, and left out of to (mean KLD per position)",
          {"axis", "from + axis vs from", "to - axis vs to", "moves"},
          {}};
  for (const bisect::AxisEffect& e : r.verdict.axes) {
    std::string moves = e.moves_alone && e.moves_in_to ? "alone and in to"
                        : e.moves_alone                ? "alone only"
                        : e.moves_in_to                ? "in to only"
                                                       : "no";
    if (!e.alone || !e.removed) moves = "-";
    t.rows.push_back({e.axis, Kld(e.alone), Kld(e.removed), moves});
  }
  return t;
}

Table BisectWalkTable(const BisectReport& r) {
  Table t{"bisection: the walk from from to to", {"step", "vs from", "vs to"}, {}};
  for (const bisect::WalkStep& s : r.verdict.walk) {
    t.rows.push_back({Label(r, s.set), Kld(s.from_kld), Kld(s.to_kld)});
  }
  return t;
}

Table BisectCellTable(const BisectReport& r) {
  Table t{"bisection: every cell against both ends",
          {"cell", "round", "KLD vs from", "flips vs from", "KLD vs to", "flips vs to",
           "positions (exact)", "own noise", "missing"},
          {}};
  for (const BisectCellReport& c : r.cells) {
    const bisect::CellMeasure& m = c.measure;
    const bisect::Distance* any = m.from ? &*m.from : m.to ? &*m.to : nullptr;
    t.rows.push_back(
        {c.label, std::to_string(c.round), m.from ? FormatKld(m.from->kld) : "-",
         m.from ? std::to_string(m.from->flips) : "-", m.to ? FormatKld(m.to->kld) : "-",
         m.to ? std::to_string(m.to->flips) : "-",
         any ? std::to_string(any->positions) + " (" + std::to_string(any->exact_positions) + ")"
             : "-",
         m.noise ? FormatKld(*m.noise) : "-", c.missing});
  }
  return t;
}

namespace {

BisectJsonValue DistanceJson(const std::optional<bisect::Distance>& d) {
  if (!d) return nullptr;
  return {
      {"kld", d->kld},
      {"positions", d->positions},
      {"exact_positions", d->exact_positions},
      {"flips", d->flips},
      {"identical", d->identical},
      {"first_flip", d->first_flip ? BisectJsonValue(*d->first_flip) : BisectJsonValue(nullptr)}};
}

BisectJsonValue OptionalJson(const std::optional<double>& v) {
  return v ? BisectJsonValue(*v) : BisectJsonValue(nullptr);
}

BisectJsonValue SetsJson(const BisectReport& r, const std::vector<bisect::AxisSet>& sets) {
  BisectJsonValue out = BisectJsonValue::array();
  for (bisect::AxisSet s : sets) out.push_back(Label(r, s));
  return out;
}

BisectJsonValue AxesJson(const BisectReport& r) {
  BisectJsonValue axes = BisectJsonValue::array();
  for (const bisect::AxisEffect& e : r.verdict.axes) {
    axes.push_back({{"axis", e.axis},
                    {"alone", OptionalJson(e.alone)},
                    {"left_out_of_to", OptionalJson(e.removed)},
                    {"moves_alone", e.moves_alone},
                    {"moves_in_to", e.moves_in_to}});
  }
  return axes;
}

BisectJsonValue WalkJson(const BisectReport& r) {
  BisectJsonValue walk = BisectJsonValue::array();
  for (const bisect::WalkStep& s : r.verdict.walk) {
    walk.push_back({{"cell", Label(r, s.set)},
                    {"from", OptionalJson(s.from_kld)},
                    {"to", OptionalJson(s.to_kld)}});
  }
  return walk;
}

BisectJsonValue CellsJson(const BisectReport& r) {
  BisectJsonValue cells = BisectJsonValue::array();
  for (const BisectCellReport& c : r.cells) {
    cells.push_back(
        {{"label", c.label},
         {"axes", AxesOf(r, c.set)},
         {"round", c.round},
         {"from", DistanceJson(c.measure.from)},
         {"to", DistanceJson(c.measure.to)},
         {"noise", OptionalJson(c.measure.noise)},
         {"missing", c.missing.empty() ? BisectJsonValue(nullptr) : BisectJsonValue(c.missing)}});
  }
  return cells;
}

BisectJsonValue InteractionsJson(const BisectReport& r) {
  BisectJsonValue interactions = BisectJsonValue::array();
  for (const bisect::Interaction& i : r.verdict.interactions)
    interactions.push_back({{"axes", AxesOf(r, i.axes)}, {"text", i.text}});
  return interactions;
}

BisectJsonValue TasksJson(const BisectReport& r) {
  BisectJsonValue tasks = BisectJsonValue::array();
  for (const BisectTaskRow& t : r.tasks) {
    const Interval& ci = t.pass_rate.ci95;
    const bool from = t.cell == "from";
    tasks.push_back({{"cell", t.cell},
                     {"task", t.workload},
                     {"status", t.status},
                     {"cases", t.cases},
                     {"cases_planned", t.cases_planned},
                     {"pass_rate",
                      t.pass_rate.n ? BisectJsonValue(t.pass_rate.mean) : BisectJsonValue(nullptr)},
                     {"pass_rate_n", t.pass_rate.n},
                     {"pass_rate_ci95",
                      ci.available() ? BisectJsonValue({ci.lo, ci.hi}) : BisectJsonValue(nullptr)},
                     {"changed", from ? BisectJsonValue(nullptr) : BisectJsonValue(t.changed)},
                     {"near_tie", from ? BisectJsonValue(nullptr) : BisectJsonValue(t.near_tie)},
                     {"broken", from ? BisectJsonValue(nullptr) : BisectJsonValue(t.broken)},
                     {"fixed", from ? BisectJsonValue(nullptr) : BisectJsonValue(t.fixed)}});
  }
  return tasks;
}

}  // namespace

nlohmann::ordered_json BisectJson(const BisectReport& r) {
  const bisect::Verdict& v = r.verdict;
  bool explained = v.kind == bisect::VerdictKind::kExplained;
  return {{"axes", r.plan.axes},
          {"tolerance", r.plan.tolerance},
          {"rounds", r.rounds},
          {"workloads", r.workloads},
          {"verdict", bisect::VerdictKindName(v.kind)},
          {"explaining",
           explained ? BisectJsonValue(AxesOf(r, v.explaining)) : BisectJsonValue(nullptr)},
          {"total_kld", v.total},
          {"noise", v.noise},
          {"noise_known", v.noise_known},
          {"threshold", v.threshold},
          {"sufficient_residual", OptionalJson(v.sufficient_residual)},
          {"necessary_residual", OptionalJson(v.necessary_residual)},
          {"next", SetsJson(r, v.next)},
          {"repeat", SetsJson(r, v.repeat)},
          {"interactions", InteractionsJson(r)},
          {"by_axis", AxesJson(r)},
          {"walk", WalkJson(r)},
          {"cells", CellsJson(r)},
          {"tasks", TasksJson(r)}};
}

}  // namespace orch::report
