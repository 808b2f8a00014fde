// The plan as JSON: the stable schema "orch.plan/1" that `orch plan --json` prints.
// Every field is documented in docs/plan-json.md; fields are only ever added.
#pragma once

#include <string>
#include <vector>

#include "plan_document/plan_document.h"
#include "planner/diagnostics.h"
#include "planner/plan.h"

namespace orch::planner {

using plan_document::kPlanSchema;

// The plan as the typed document every reader and writer of plan JSON shares.
plan_document::Document ToDocument(const Plan& plan);
// WritePlanJson(ToDocument(plan)): 2-space indent, a trailing newline.
std::string PlanToJson(const Plan& plan);

// {"schema":"orch.plan-errors/1","file":...,"errors":[...],"warnings":[...]} for scripts
// that ask for JSON and hand in an invalid spec.
std::string DiagnosticsToJson(const std::string& file, const Diagnostics& diagnostics);

}  // namespace orch::planner
