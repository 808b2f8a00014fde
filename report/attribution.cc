#include "report/attribution.h"

#include "report/kld_figure.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace orch::report {
namespace {

using Ranks = std::map<std::string, AxisRank>;

void Keep(Ranks& ranks, const AxisRank& rank, double AxisRank::*key) {
  auto [it, inserted] = ranks.emplace(rank.axis, rank);
  if (!inserted && (std::isnan(it->second.*key) || rank.*key > it->second.*key)) {
    it->second = rank;
  }
}

// Which of an AxisRank's figures a ranking is by: value, n, interval, separability note.
struct Key {
  double AxisRank::*value;
  std::uint64_t AxisRank::*n;
  Interval AxisRank::*ci95;
  std::string AxisRank::*separability;
};
constexpr Key kKld{&AxisRank::kld_mean, &AxisRank::kld_n, &AxisRank::kld_ci95,
                   &AxisRank::kld_separability};
constexpr Key kTop1{&AxisRank::top1_disagreement, &AxisRank::top1_n, &AxisRank::top1_ci95,
                    &AxisRank::top1_separability};

// Strongest first; a rank whose interval overlaps the one above cannot be told from it.
std::vector<AxisRank> Sorted(const Ranks& ranks, const Key& key) {
  std::vector<AxisRank> out;
  for (const auto& [axis, rank] : ranks) out.push_back(rank);
  std::stable_sort(out.begin(), out.end(), [&key](const AxisRank& a, const AxisRank& b) {
    if (std::isnan(a.*key.value)) return false;
    return std::isnan(b.*key.value) || a.*key.value > b.*key.value;
  });
  for (std::size_t i = 1; i < out.size(); ++i) {
    const AxisRank& above = out[i - 1];
    AxisRank& rank = out[i];
    if (std::isnan(rank.*key.value) || !Overlap(above.*key.ci95, rank.*key.ci95)) continue;
    rank.*key.separability = "not separable from rank " + std::to_string(i) + " (" + above.cell +
                             ") at n=" + std::to_string(rank.*key.n) + " vs " +
                             std::to_string(above.*key.n);
  }
  return out;
}

AxisRank RankOf(const WorkloadReport& w, const CellReport& c) {
  // The figure that rests on the most positions (report/kld_figure.h).
  const KldFigure figure = MostPositionsKld(c.result);
  const KldSummary& kld = figure.kld != nullptr ? *figure.kld : c.result.kld_bound;
  const Estimate& flips = c.result.estimates.flip_rate;
  AxisRank rank;
  rank.axis = c.cell.axis;
  rank.cell = c.cell.label;
  rank.workload = w.workload.name;
  rank.kld_mean = kld.mean;
  rank.kld_method = figure.kld != nullptr ? figure.method : "bound";
  rank.top1_disagreement = flips.mean;
  rank.kld_n = kld.count;
  rank.kld_ci95 = kld.ci95;
  rank.top1_n = flips.n;
  rank.top1_ci95 = flips.ci95;
  rank.exact_positions = c.result.kld_exact.count;
  rank.compared_positions = c.result.summary.compared;
  return rank;
}

AxisRank ReturnedRankOf(const WorkloadReport& w, const CellReport& c) {
  AxisRank rank = RankOf(w, c);
  rank.kld_mean = c.result.kld_returned_top_k.mean;
  rank.kld_method = ReturnedTopKName(c.result.returned_top_k);
  rank.kld_n = c.result.kld_returned_top_k.count;
  rank.kld_ci95 = c.result.kld_returned_top_k.ci95;
  return rank;
}

}  // namespace

void RankAxes(Report& report) {
  Ranks by_kld, by_returned, by_top1;
  for (const WorkloadReport& w : report.workloads) {
    if (w.workload.kind != WorkloadKind::kTeacherForced) continue;
    for (const CellReport& c : w.cells) {
      // A cell that ran the baseline's effective configuration did not change what its
      // axis controls: the axis is not credited with its differences.
      if (c.status != CellStatus::kCompared || c.same_effective_as_baseline) continue;
      // A bisection's combination changes several axes: no one axis is credited with it
      // (its bisection section attributes it).
      if (!c.cell.changes.empty()) continue;
      const AxisRank rank = RankOf(w, c);
      const PairResult& r = c.result;
      // A cell with full-row KLDs, or with no KLD at all, ranks as before.
      if (r.kld_exact.count + r.kld_bound.count > 0 || r.kld_returned_top_k.count == 0) {
        Keep(by_kld, rank, &AxisRank::kld_mean);
      }
      if (r.kld_returned_top_k.count > 0) {
        Keep(by_returned, ReturnedRankOf(w, c), &AxisRank::kld_mean);
      }
      Keep(by_top1, rank, &AxisRank::top1_disagreement);
    }
  }
  report.by_kld = Sorted(by_kld, kKld);
  report.by_kld_returned_top_k = Sorted(by_returned, kKld);
  report.by_top1 = Sorted(by_top1, kTop1);
}

}  // namespace orch::report
