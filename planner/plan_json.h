// The plan as JSON: the stable schema "orch.plan/1" that `orch plan --json` prints.
// Every field is documented in docs/plan-json.md; fields are only ever added.
#pragma once

#include <string>
#include <vector>

#include "planner/diagnostics.h"
#include "planner/plan.h"

namespace orch::planner {

inline constexpr const char* kPlanSchema = "orch.plan/1";

// Pretty-printed (2-space indent) JSON document with a trailing newline.
std::string PlanToJson(const Plan& plan);

// {"schema":"orch.plan-errors/1","file":...,"errors":[...],"warnings":[...]} for scripts
// that ask for JSON and hand in an invalid spec.
std::string DiagnosticsToJson(const std::string& file, const Diagnostics& diagnostics);

}  // namespace orch::planner
