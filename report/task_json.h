// The task outcome parts of the JSON rendering (docs/report.md, "Task outcomes"), for
// render_json.cc only (nlohmann_json is private to report/).
#pragma once

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace orch::report {

// "tasks": one object per task workload.
nlohmann::json TasksJson(const std::vector<TaskWorkloadReport>& tasks);
// "attribution.by_outcome_changes".
nlohmann::json OutcomeRanksJson(const std::vector<OutcomeRank>& ranks);

}  // namespace orch::report
