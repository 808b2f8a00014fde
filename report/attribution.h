// Attribution: over the teacher-forced workloads, every axis represented by its strongest
// compared cell, ranked by KLD mean and by top-1 disagreement (docs/report.md). A cell's
// KLD is its exact mean when it has exact positions, else its top-k bound mean; the rank
// says which (AxisRank::kld_method). A cell whose KLD rests on a server's returned top-k
// (top-k-only rows) is ranked apart, in Report::by_kld_returned_top_k: that is a different
// measurement, never set against exact or bound values. A cell that ran the baseline's
// effective configuration (CellReport::same_effective_as_baseline) is not ranked: its
// axis did not change what the engine ran. Pure.
#pragma once

#include "report/report.h"

namespace orch::report {

// Fills report.by_kld, report.by_kld_returned_top_k and report.by_top1 from
// report.workloads.
void RankAxes(Report& report);

}  // namespace orch::report
