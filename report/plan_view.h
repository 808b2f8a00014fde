// The parts of an "orch.plan/1" document (docs/plan-json.md) that a report needs: the
// experiment name, the model and the baseline coordinate, the workloads with their kinds,
// what they request (positions, max_tokens) and capture, the cells in plan order and every
// job with its cell, workload and repeat index. Parsed here so that report/ does not depend
// on planner/ (the layers are siblings). Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::report {

enum class WorkloadKind { kTeacherForced, kGenerate };

struct PlannedWorkload {
  std::string name;
  WorkloadKind kind = WorkloadKind::kTeacherForced;
  // What the plan asks for: teacher-forced positions, or generated tokens at most; absent
  // when the plan does not say (then nothing is flagged as short).
  std::optional<std::uint64_t> positions;
  std::optional<std::uint64_t> max_tokens;
  int top_k = 0;                 // capture.top_logits; 0 when absent
  std::uint64_t full_every = 0;  // capture.full_every: full rows every N positions (0: none)
};

// The plan's model: its name and what identifies its bytes ("sha256:HEX" for a file,
// "synth:RECIPE" for a generated model); empty when the plan does not say.
struct PlannedModel {
  std::string name;
  std::string id;
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
  PlannedModel model;
  // The baseline coordinate: axis and value as text, in the plan's (sorted) key order.
  std::vector<std::pair<std::string, std::string>> baseline;
  std::vector<PlannedWorkload> workloads;  // in plan order
  std::vector<PlannedCell> cells;          // in plan order; the baseline first
  std::vector<PlannedJob> jobs;            // in plan order
};

// InvalidArgument naming the field when the document is not an orch.plan/1 plan.
Result<PlanView> ParsePlanView(std::string_view json);

}  // namespace orch::report
