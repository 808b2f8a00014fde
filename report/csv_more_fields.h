// The CSV columns after the interval columns (docs/report.md, `--csv`): the effective
// settings (report/effective.h), every quorum group (report/quorum.h) and generation in
// full (report/generation.h), so the CSV says what the text and JSON say. Pure.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace orch::report {

// The column names, in order.
std::vector<std::string> MoreCsvColumns();
// The row's fields for those columns (raw values: the CSV writer quotes them).
std::vector<std::string> MoreCsvFields(const WorkloadReport& workload, const CellReport& cell);

}  // namespace orch::report
