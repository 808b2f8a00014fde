// The task outcome parts of the CSV and HTML renderings (docs/report.md, "Task outcomes");
// render_csv.cc and render_html.cc place them. Pure.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace orch::report {

// The columns a CSV gains when the report has task workloads.
std::vector<std::string> TaskCsvColumns();
// One row per task workload and cell (the baseline first): the first CSV columns
// (experiment, partial, workload, kind "task", cell, axis, value, status, reason), then
// `columns_before` - 9 empty fields, then the task columns.
std::vector<std::vector<std::string>> TaskCsvRows(const Report& report, std::size_t columns_before);

// One strip of cases per cell: a box per case in case-file order (green pass, red fail,
// grey no outcome), changed cases outlined, each box's title the case, its outcome and the
// post-mortem (shown on hover); a changed case's post-mortem is also listed below its strip.
std::string TaskStripsHtml(const TaskWorkloadReport& task);

}  // namespace orch::report
