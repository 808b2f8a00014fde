// The plan: an experiment spec expanded one axis at a time into cells and jobs.
//
// Cells: the baseline, then for every axis with alternatives (in the order they are
// written under [alternatives]) one cell per alternative value: the baseline with only
// that axis changed. Jobs: every cell x every workload it applies to x its repeats
// (baseline: repeats.baseline; other cells: repeats.cells). Sampler axes apply only to
// generate workloads. The order is deterministic and is the order of `jobs`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan_document/plan_document.h"
#include "planner/capabilities.h"
#include "planner/diagnostics.h"
#include "planner/spec.h"
#include "planner/spec_parser.h"

namespace orch::planner {

// What an agent must have to run a job, derived from the job's coordinate: the engine
// label as in the coordinate ("llama.cpp@b8390"), the hardware class ("cpu", "gpu:h100"),
// at least this many GPUs (tp on GPU hardware, 0 on CPU), and the model
// ("sha256:<hex>" or "synth:<recipe>", Model::RequirementFor). One type with the plan
// document's.
using Requirements = plan_document::Requirements;

struct Cell {
  int axis = -1;          // index into Spec::axes; -1 for the baseline and a combination
  int alternative = -1;   // index into that axis's alternatives
  std::string label;      // "baseline", "axis=value", or a combination's set ("to - kv")
  Coordinate coordinate;  // every axis of the cell
  Requirements requirements;
  // A bisection's cell: which of its axes the cell switches to `to`'s values (a cell of one
  // axis is an ordinary one-axis cell too), the round that added it, and whether it runs
  // the baseline's repeats. 0, 0, false in other plans.
  bisect::AxisSet set = 0;
  int round = 0;
  bool repeated = false;
  bool is_baseline() const { return axis < 0 && set == 0; }
  // A bisection's cell that switches several axes at once.
  bool is_combination() const { return axis < 0 && set != 0; }
};

struct Job {
  std::string id;    // 32 hex digits; see planner/job_id.h
  int cell = 0;      // index into Plan::cells
  int workload = 0;  // index into Spec::workloads
  int repeat = 0;    // 0-based repeat index within the cell
};

struct Plan {
  Spec spec;
  std::vector<Cell> cells;
  std::vector<Job> jobs;
  std::vector<Diagnostic> warnings;

  // The coordinate a job runs: its cell's axes that apply to its workload kind.
  Coordinate JobCoordinate(const Job& job) const;
  const Cell& CellOf(const Job& job) const { return cells[job.cell]; }
  const Workload& WorkloadOf(const Job& job) const { return spec.workloads[job.workload]; }
};

struct PlanOutcome {
  std::optional<Plan> plan;  // set when there is no error
  Diagnostics diagnostics;   // errors and warnings, in the order found
};

// Expands a valid spec; reports cells that their engine cannot run.
PlanOutcome ExpandSpec(Spec spec);

// Parse, validate and expand in one step (what `orch plan` does).
PlanOutcome PlanSpec(std::string_view toml_text, const std::string& file, SourceReader& reader);

// True when `axis` changes jobs of `kind` (sampler axes only change generate jobs).
bool AxisApplies(std::string_view axis, WorkloadKind kind);

// True when `cell` gives `axis` a value other than the baseline's.
bool CellChanges(const Spec& spec, const Cell& cell, const std::string& axis);

// Where the spec gives `cell` its value of `axis`, and the field that names it in
// diagnostics: baseline.AXIS (bisect.from.AXIS) for an axis at its baseline value,
// alternatives.AXIS[I] (bisect.to.AXIS) for the axis the cell changes.
struct AxisSource {
  SourcePos pos;
  std::string field;
};
AxisSource AxisSourceOf(const Spec& spec, const Cell& cell, const std::string& axis);

}  // namespace orch::planner
