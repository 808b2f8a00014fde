// Attribution: over the teacher-forced workloads, every axis represented by its strongest
// compared cell, ranked by KLD mean and by top-1 disagreement (docs/report.md). A cell's
// KLD is its exact mean when it has exact positions, else its top-k bound mean; the rank
// says which (AxisRank::kld_method). Pure.
#pragma once

#include "report/report.h"

namespace orch::report {

// Fills report.by_kld and report.by_top1 from report.workloads.
void RankAxes(Report& report);

}  // namespace orch::report
