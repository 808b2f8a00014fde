// The bisection section of a report (report/bisect_report.h) as words, tables and JSON,
// shared by the text, HTML and JSON renderings (docs/bisect.md defines each field).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/bisect_report.h"
#include "report/tables.h"

namespace orch::report {

// The verdict in words: which set explains the divergence and within what, or why none
// does yet; then what the figures rest on. One entry per paragraph.
std::vector<std::string> BisectVerdictLines(const BisectReport& report);
// Per axis: its effect alone from from, and left out of to.
Table BisectAxisTable(const BisectReport& report);
// The walk from from to to, one axis at a time.
Table BisectWalkTable(const BisectReport& report);
// Every cell measured against both ends.
Table BisectCellTable(const BisectReport& report);
// Task outcomes per cell (empty rows without task workloads).
Table BisectTaskTable(const BisectReport& report);
// The "bisect" object of orch.report/1.
nlohmann::ordered_json BisectJson(const BisectReport& report);

}  // namespace orch::report
