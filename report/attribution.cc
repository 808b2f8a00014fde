#include "report/attribution.h"

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

std::vector<AxisRank> Sorted(const Ranks& ranks, double AxisRank::*key) {
  std::vector<AxisRank> out;
  for (const auto& [axis, rank] : ranks) out.push_back(rank);
  std::stable_sort(out.begin(), out.end(), [key](const AxisRank& a, const AxisRank& b) {
    if (std::isnan(a.*key)) return false;
    return std::isnan(b.*key) || a.*key > b.*key;
  });
  return out;
}

AxisRank RankOf(const WorkloadReport& w, const CellReport& c) {
  const bool exact = c.result.kld_exact.count > 0;
  AxisRank rank{c.cell.axis,
                c.cell.label,
                w.workload.name,
                exact ? c.result.kld_exact.mean : c.result.kld_bound.mean,
                exact ? "exact" : "bound",
                1.0 - c.result.summary.top1_agreement};
  rank.exact_positions = c.result.kld_exact.count;
  rank.compared_positions = c.result.summary.compared;
  return rank;
}

AxisRank ReturnedRankOf(const WorkloadReport& w, const CellReport& c) {
  AxisRank rank = RankOf(w, c);
  rank.kld_mean = c.result.kld_returned_top_k.mean;
  rank.kld_method = ReturnedTopKName(c.result.returned_top_k);
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
  report.by_kld = Sorted(by_kld, &AxisRank::kld_mean);
  report.by_kld_returned_top_k = Sorted(by_returned, &AxisRank::kld_mean);
  report.by_top1 = Sorted(by_top1, &AxisRank::top1_disagreement);
}

}  // namespace orch::report
