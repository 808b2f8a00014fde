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
  return AxisRank{c.cell.axis,
                  c.cell.label,
                  w.workload.name,
                  exact ? c.result.kld_exact.mean : c.result.kld_bound.mean,
                  exact ? "exact" : "bound",
                  1.0 - c.result.summary.top1_agreement};
}

}  // namespace

void RankAxes(Report& report) {
  Ranks by_kld, by_top1;
  for (const WorkloadReport& w : report.workloads) {
    if (w.workload.kind != WorkloadKind::kTeacherForced) continue;
    for (const CellReport& c : w.cells) {
      if (c.status != CellStatus::kCompared) continue;
      const AxisRank rank = RankOf(w, c);
      Keep(by_kld, rank, &AxisRank::kld_mean);
      Keep(by_top1, rank, &AxisRank::top1_disagreement);
    }
  }
  report.by_kld = Sorted(by_kld, &AxisRank::kld_mean);
  report.by_top1 = Sorted(by_top1, &AxisRank::top1_disagreement);
}

}  // namespace orch::report
