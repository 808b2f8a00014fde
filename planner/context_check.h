// Whether every workload fits the context size of the cells that set one (the
// `ctx` axis), decided at plan time so that no run fails for it later.
//
// What a workload needs: teacher_forced, the `positions` it asks for; generate,
// at least max_tokens + 1 (a prompt has at least one token; its exact length
// needs the model's tokenizer, which the planner does not have).
#pragma once

#include <vector>

#include "planner/diagnostics.h"
#include "planner/plan.h"

namespace orch::planner {

// Reports, for the baseline and each `ctx` cell, every workload whose need
// exceeds the cell's ctx: one error at the ctx value, naming the cell, the
// workload and both numbers. Cells without a ctx axis are not checked.
void CheckContextFits(const Spec& spec, const std::vector<Cell>& cells, Diagnostics& diagnostics);

}  // namespace orch::planner
