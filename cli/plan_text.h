// The human form of a plan, as `orch plan` prints it: a summary, one table row per job,
// warnings last. The machine form is planner/plan_to_json.h.
#pragma once

#include <string>

#include "planner/plan.h"

namespace orch::cli {

std::string FormatPlanText(const planner::Plan& plan);

}  // namespace orch::cli
