#include "report/bisect_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/pair_compare.h"

namespace orch::report {
namespace {

// A cell's set: from is 0; a one-axis cell its axis; a combination its changes. Nullopt
// when it names an axis the bisection does not have.
std::optional<bisect::AxisSet> SetOf(const PlannedBisect& b, const PlannedCell& cell) {
  std::vector<std::string> names;
  if (!cell.axis.empty()) names.push_back(cell.axis);
  for (const auto& [axis, value] : cell.changes) names.push_back(axis);
  bisect::AxisSet set = 0;
  for (const std::string& name : names) {
    auto it = std::find(b.axes.begin(), b.axes.end(), name);
    if (it == b.axes.end()) return std::nullopt;
    set |= bisect::AxisSet{1} << (it - b.axes.begin());
  }
  return set;
}

// The chosen runs of each (cell, workload) by repeat, from one pass over the plan's jobs.
// A pair with planned jobs but no finished run has an empty list; an unplanned pair none.
using RunIndex = std::map<std::pair<std::string, std::string>, std::map<int, std::string>>;

RunIndex IndexRuns(const PlanView& plan, const JobRuns& runs) {
  RunIndex index;
  for (const PlannedJob& job : plan.jobs) {
    std::map<int, std::string>& by_repeat = index[{job.cell, job.workload}];
    if (const store::RunRecord* run = runs.Chosen(job.id)) by_repeat.emplace(job.repeat, run->id);
  }
  return index;
}

// One distance summed over workloads: KLD weighted by its positions.
struct Sum {
  double kld_sum = 0.0;
  bisect::Distance distance = {0.0, 0, 0, 0, true, std::nullopt, -1};

  void Add(const PairResult& r) {
    const digest::KldStats& k = r.summary.kld.count > 0 ? r.summary.kld : r.summary.returned_kld;
    if (k.count > 0 && std::isfinite(k.mean)) {
      kld_sum += k.mean * static_cast<double>(k.count);
      distance.positions += k.count;
      distance.exact_positions += r.summary.kld.count > 0 ? k.exact_count : 0;
    }
    distance.flips += r.flip_count;
    distance.identical = distance.identical && r.bit_identical();
    if (!r.flips.empty()) {
      std::uint64_t at = r.flips.front().position;
      distance.first_flip = std::min(distance.first_flip.value_or(at), at);
    }
  }
  bisect::Distance Done() {
    distance.kld = distance.positions > 0 ? kld_sum / static_cast<double>(distance.positions) : 0.0;
    return distance;
  }
};

PairOptions OptionsFor(const PlannedWorkload& w) {
  PairOptions options;
  options.stop_metrics_at_token_divergence = w.kind == WorkloadKind::kGenerate;
  return options;
}

class Measurer {
 public:
  Measurer(const PlanView& plan, const JobRuns& runs, RunSource& source)
      : plan_(plan), index_(IndexRuns(plan, runs)), source_(source) {}

  // Measures `cell` against the ends (labels `from` and `to`) on every workload.
  Status Measure(const std::string& from, const std::string& to, BisectCellReport& cell) {
    Sum to_from, to_to;
    bool from_ok = true, to_ok = true;
    std::optional<double> noise = 0.0;
    for (const PlannedWorkload& w : plan_.workloads) {
      if (!index_.contains({cell.label, w.name})) continue;  // not planned for this workload
      std::vector<std::string> mine = RunsOf(cell.label, w.name);
      if (mine.empty()) {
        Missing(cell, "no finished run of workload " + w.name);
        return Status();
      }
      for (auto [end, sum, ok] :
           {std::tuple(&from, &to_from, &from_ok), std::tuple(&to, &to_to, &to_ok)}) {
        if (*end == cell.label) continue;  // zero by definition
        std::vector<std::string> theirs = RunsOf(*end, w.name);
        if (theirs.empty()) {
          *ok = false;
          Missing(cell, *end + " has no finished run of workload " + w.name);
          continue;
        }
        ORCH_ASSIGN_OR_RETURN(PairResult r, Compare(theirs[0], mine[0], w, cell.label));
        sum->Add(r);
      }
      if (mine.size() < 2) noise.reset();
      for (std::size_t k = 1; noise && k < mine.size(); ++k) {
        ORCH_ASSIGN_OR_RETURN(PairResult r, Compare(mine[0], mine[k], w, cell.label));
        Sum own;
        own.Add(r);
        noise = std::max(*noise, own.Done().kld);
      }
    }
    if (from_ok && cell.label != from) cell.measure.from = to_from.Done();
    if (to_ok && cell.label != to) cell.measure.to = to_to.Done();
    cell.measure.noise = noise;
    return Status();
  }

 private:
  std::vector<std::string> RunsOf(const std::string& cell, const std::string& workload) const {
    std::vector<std::string> out;
    auto it = index_.find({cell, workload});
    if (it != index_.end()) {
      for (const auto& [repeat, run] : it->second) out.push_back(run);
    }
    return out;
  }

  static void Missing(BisectCellReport& cell, const std::string& why) {
    if (cell.missing.empty()) cell.missing = why;
  }

  Result<PairResult> Compare(const std::string& reference, const std::string& other,
                             const PlannedWorkload& w, const std::string& label) {
    Result<PairResult> r = ComparePair(source_, reference, other, OptionsFor(w));
    if (!r.ok()) return r.status().WithContext("bisection cell " + label + ", workload " + w.name);
    return r;
  }

  const PlanView& plan_;
  const RunIndex index_;
  RunSource& source_;
};

}  // namespace

Result<std::optional<BisectReport>> BuildBisectReport(const PlanView& plan, const JobRuns& runs,
                                                      RunSource& source) {
  if (!plan.bisect) return std::optional<BisectReport>();
  BisectReport out;
  out.plan = *plan.bisect;
  if (static_cast<int>(out.plan.axes.size()) > bisect::kMaxAxes || out.plan.axes.empty()) {
    return InvalidArgument("plan.bisect.axes: " + std::to_string(out.plan.axes.size()) +
                           " axes; a bisection has 1 to " + std::to_string(bisect::kMaxAxes));
  }
  for (const PlannedWorkload& w : plan.workloads) out.workloads.push_back(w.name);
  const bisect::AxisSet all = bisect::Everything(static_cast<int>(out.plan.axes.size()));
  std::string from, to;
  for (const PlannedCell& c : plan.cells) {
    std::optional<bisect::AxisSet> set = SetOf(out.plan, c);
    if (!set) continue;
    out.cells.push_back({c.label, *set, c.round, {}, ""});
    out.rounds = std::max(out.rounds, c.round);
    if (*set == 0) from = c.label;
    if (*set == all) to = c.label;
  }
  Measurer measurer(plan, runs, source);
  for (BisectCellReport& cell : out.cells) {
    ORCH_RETURN_IF_ERROR(measurer.Measure(from, to, cell));
  }
  bisect::Options options;
  options.tolerance = out.plan.tolerance;
  out.verdict = bisect::Attribute(out.plan.axes, MeasuresOf(out), options);
  return std::optional<BisectReport>(std::move(out));
}

bisect::Measures MeasuresOf(const BisectReport& report) {
  bisect::Measures measures;
  for (const BisectCellReport& cell : report.cells) measures[cell.set] = cell.measure;
  return measures;
}

std::optional<double> MeasuredTotal(const BisectReport& report) {
  if (report.verdict.kind == bisect::VerdictKind::kUnmeasured) return std::nullopt;
  return report.verdict.total;
}

void AddTaskOutcomes(BisectReport& report, const std::vector<TaskWorkloadReport>& tasks) {
  auto row = [](const std::string& label, const std::string& workload, const TaskCellReport& c) {
    return BisectTaskRow{label,       workload,  c.status,   c.cases,  c.cases_planned,
                         c.pass_rate, c.changed, c.near_tie, c.broken, c.fixed};
  };
  for (const TaskWorkloadReport& task : tasks) {
    if (!task.error.empty()) continue;
    report.tasks.push_back(row("from", task.name, task.baseline));
    for (const BisectCellReport& cell : report.cells) {
      for (const TaskCellReport& c : task.cells) {
        if (c.cell.label == cell.label) report.tasks.push_back(row(cell.label, task.name, c));
      }
    }
  }
}

}  // namespace orch::report
