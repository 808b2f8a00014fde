// The parts of an "orch.plan/1" document (docs/plan-json.md) that a report needs: the
// experiment name, the workloads and their kinds, the cells in plan order and every job
// with its cell, workload and repeat index. Parsed here so that report/ does not depend
// on planner/ (the layers are siblings). Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::report {

enum class WorkloadKind { kTeacherForced, kGenerate };

struct PlannedWorkload {
  std::string name;
  WorkloadKind kind = WorkloadKind::kTeacherForced;
};

struct PlannedCell {
  std::string label;  // "baseline" or "axis=value"
  std::string axis;   // empty for the baseline
  std::string value;  // the changed value as text; empty for the baseline
  bool is_baseline() const { return axis.empty(); }
};

struct PlannedJob {
  std::string id;
  std::string cell;      // a PlannedCell label
  std::string workload;  // a PlannedWorkload name
  int repeat = 0;        // 0-based
};

struct PlanView {
  std::string experiment;
  std::vector<PlannedWorkload> workloads;  // in plan order
  std::vector<PlannedCell> cells;          // in plan order; the baseline first
  std::vector<PlannedJob> jobs;            // in plan order
};

// InvalidArgument naming the field when the document is not an orch.plan/1 plan.
Result<PlanView> ParsePlanView(std::string_view json);

}  // namespace orch::report
