// The parts of an "orch.plan/1" document (docs/plan-json.md) that a report needs: the
// experiment name, the model and the baseline coordinate, the workloads with their kinds,
// what they request (positions, max_tokens) and capture, the cells in plan order and every
// job with its cell, workload and repeat index. Parsed here so that report/ does not depend
// on planner/ (the layers are siblings). Unknown fields are ignored.
//
// Task workloads (docs/tasks.md): a workload of kind "task" holds the cases and their
// checks and has no jobs of its own; its jobs run per-case workload documents (generate,
// or teacher_forced per choice) that carry a `task` object {"workload", "case", "choice"}.
// Those are PlannedWorkloads with `task` set; the task workloads are listed apart.
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

// Which task case (and, for multiple choice, which choice) a per-case workload runs.
struct TaskCoordinate {
  std::string workload;  // the task workload's name
  std::string case_id;
  int choice = -1;  // 0-based; -1 when not multiple choice
};

struct PlannedWorkload {
  std::string name;
  WorkloadKind kind = WorkloadKind::kTeacherForced;
  // What the plan asks for: teacher-forced positions, or generated tokens at most; absent
  // when the plan does not say (then nothing is flagged as short).
  std::optional<std::uint64_t> positions;
  std::optional<std::uint64_t> max_tokens;
  int top_k = 0;                       // capture.top_logits; 0 when absent
  std::uint64_t full_every = 0;        // capture.full_every: full rows every N positions (0: none)
  std::optional<TaskCoordinate> task;  // a per-case workload of a task workload
};

// A workload of kind "task": its name and its object as the plan holds it (compact JSON).
struct PlannedTaskWorkload {
  std::string name;
  std::string json;
};

// The plan's model: its name and what identifies its bytes ("sha256:HEX" for a file,
// "synth:RECIPE" for a generated model); empty when the plan does not say.
struct PlannedModel {
  std::string name;
  std::string id;
};

struct PlannedCell {
  std::string label;  // "baseline", "axis=value", or a bisection's set ("to - kv")
  std::string axis;   // empty for the baseline and a combination
  std::string value;  // the changed value as text; empty for the baseline
  // A bisection's cell that switches several axes: each axis and its value as text.
  std::vector<std::pair<std::string, std::string>> changes = {};
  int round = 0;  // a bisection's cell: the round that added it; else 0
  bool is_baseline() const { return axis.empty() && changes.empty(); }
};

// A bisection's plan (docs/bisect.md): the baseline is its from, the cell "to" its to.
struct PlannedBisect {
  std::vector<std::string> axes;  // in walk order
  double tolerance = 0.0;
  int max_rounds = 0;
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
  std::vector<PlannedWorkload> workloads;  // in plan order, task workloads excepted
  std::vector<PlannedTaskWorkload> tasks;  // the task workloads, in plan order
  std::vector<PlannedCell> cells;          // in plan order; the baseline first
  std::vector<PlannedJob> jobs;            // in plan order
  std::optional<PlannedBisect> bisect;
};

// InvalidArgument naming the field when the document is not an orch.plan/1 plan.
Result<PlanView> ParsePlanView(std::string_view json);

}  // namespace orch::report
