// One-axis-at-a-time expansion and the capability checks of every cell.
#include <algorithm>
#include <bit>
#include <set>

#include "planner/axes.h"
#include "planner/context_check.h"
#include "planner/job_id.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

std::string TextOf(const Coordinate& c, const char* axis) {
  auto it = c.find(axis);
  return it == c.end() ? "" : it->second.ToText();
}

Requirements RequirementsOf(const Coordinate& c, const Model& model) {
  Requirements r;
  r.engine = TextOf(c, "engine");
  r.hardware = TextOf(c, "hardware");
  auto tp = c.find("tp");
  // The tp axis (tensor-parallel degree) asks for that many GPUs, but only on GPU
  // hardware: on a CPU it asks for none.
  bool gpu = r.hardware.starts_with("gpu");
  r.gpus = gpu && tp != c.end() && tp->second.is_int() ? static_cast<int>(tp->second.as_int()) : 0;
  r.model = model.RequirementFor(TextOf(c, "quant"));
  return r;
}

Cell MakeCell(const Spec& spec, int axis, int alternative) {
  Cell cell;
  cell.axis = axis;
  cell.alternative = alternative;
  // Every axis at its baseline, then (below) one axis at one alternative: a cell
  // differs from the baseline in exactly one axis.
  for (const Axis& a : spec.axes) cell.coordinate[a.name] = a.baseline;
  if (axis < 0) {
    cell.label = "baseline";
  } else {
    const Axis& a = spec.axes[axis];
    const AxisValue& value = a.alternatives[alternative];
    cell.coordinate[a.name] = value;
    cell.label = a.name + "=" + value.ToText();
  }
  cell.requirements = RequirementsOf(cell.coordinate, spec.model);
  return cell;
}

// Axes in the order their alternatives are written (file order), then the rest.
std::vector<int> AlternativeOrder(const Spec& spec) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(spec.axes.size()); ++i) {
    if (!spec.axes[i].alternatives.empty()) order.push_back(i);
  }
  auto first_pos = [&](int i) {
    SourcePos p =
        spec.axes[i].alternative_pos.empty() ? SourcePos{} : spec.axes[i].alternative_pos[0];
    return std::pair(p.line, p.column);
  };
  // Stable: axes with no source position (a spec built in code) keep their order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return first_pos(a) < first_pos(b); });
  return order;
}

// `from` with `set` of the bisection's axes at `to`'s values.
Cell MakeBisectCell(const Spec& spec, const BisectCell& b) {
  const std::vector<int>& axes = spec.bisect->axes;
  Cell cell;
  if (bisect::SetSize(b.set) == 1) {
    cell = MakeCell(spec, axes[std::countr_zero(b.set)], 0);
  } else {
    cell = MakeCell(spec, -1, -1);
    for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
      if (bisect::HasAxis(b.set, i))
        cell.coordinate[spec.axes[axes[i]].name] = spec.axes[axes[i]].alternatives.front();
    }
    cell.requirements = RequirementsOf(cell.coordinate, spec.model);
  }
  cell.label = bisect::SetLabel(spec.BisectAxisNames(), b.set);
  cell.set = b.set;
  cell.round = b.round;
  cell.repeated = b.repeated || b.set == bisect::Everything(static_cast<int>(axes.size()));
  return cell;
}

std::vector<Cell> MakeCells(const Spec& spec) {
  std::vector<Cell> cells = {MakeCell(spec, -1, -1)};
  if (spec.bisect) {
    cells.front().label = bisect::SetLabel(spec.BisectAxisNames(), 0);
    cells.front().round = 1;
    for (const BisectCell& b : spec.bisect->cells) cells.push_back(MakeBisectCell(spec, b));
    return cells;
  }
  for (int axis : AlternativeOrder(spec)) {
    for (int alt = 0; alt < static_cast<int>(spec.axes[axis].alternatives.size()); ++alt) {
      cells.push_back(MakeCell(spec, axis, alt));
    }
  }
  return cells;
}

// Where a capability problem of `cell` is reported: a one-axis cell's own value; a
// combination's value of the problem's axis when it switches it, else of its first axis.
AxisSource ProblemSource(const Spec& spec, const Cell& cell, const std::string& problem_axis) {
  if (cell.is_baseline()) return AxisSourceOf(spec, cell, problem_axis);
  if (!cell.is_combination()) return AxisSourceOf(spec, cell, spec.axes[cell.axis].name);
  std::vector<std::string> names = spec.BisectAxisNames();
  auto named = std::find(names.begin(), names.end(), problem_axis);
  if (named != names.end() && bisect::HasAxis(cell.set, static_cast<int>(named - names.begin()))) {
    return AxisSourceOf(spec, cell, problem_axis);
  }
  return AxisSourceOf(spec, cell, names[std::countr_zero(cell.set)]);
}

void WarnUndeclaredEngine(const Spec& spec, const Cell& cell, const std::string& engine,
                          Diagnostics& diagnostics) {
  AxisSource source = ProblemSource(spec, cell, "engine");
  diagnostics.Warning(source.pos, source.field,
                      "orch has no capability table for engine " + Quote(engine) +
                          "; its values are not checked here (no capability declaration "
                          "of its driver is built into orch)");
}

// Problems of the baseline are reported once; a cell reports only what it adds.
void CheckCells(const Spec& spec, const std::vector<Cell>& cells, Diagnostics& diagnostics) {
  std::set<std::string> baseline_problems;
  std::set<std::string> warned_engines;
  for (const Cell& cell : cells) {
    std::string engine = TextOf(cell.coordinate, "engine");
    if (engine.empty()) return;  // no baseline engine: already reported by the parser
    const EngineCapabilities* caps = FindEngineCapabilities(EngineFamily(engine));
    if (caps == nullptr) {
      if (warned_engines.insert(engine).second)
        WarnUndeclaredEngine(spec, cell, engine, diagnostics);
      continue;
    }
    // cells[0] is the baseline (MakeCells), so its problems are all known before
    // any other cell is checked.
    for (const CapabilityProblem& problem : CheckCoordinate(*caps, cell.coordinate)) {
      if (cell.is_baseline()) {
        baseline_problems.insert(problem.message);
      } else if (baseline_problems.count(problem.message) > 0) {
        continue;
      }
      std::string prefix = cell.is_baseline() ? "" : "cell " + cell.label + ": ";
      AxisSource source = ProblemSource(spec, cell, problem.axes.front());
      diagnostics.Error(source.pos, source.field, prefix + problem.message);
    }
  }
}

void WarnUnusedSamplerAxes(const Spec& spec, Diagnostics& diagnostics) {
  bool any_generate =
      std::any_of(spec.workloads.begin(), spec.workloads.end(),
                  [](const Workload& w) { return w.kind == WorkloadKind::kGenerate; });
  if (any_generate) return;
  for (const Axis& axis : spec.axes) {
    if (axis.alternatives.empty() || AxisApplies(axis.name, WorkloadKind::kTeacherForced)) continue;
    diagnostics.Warning(axis.alternative_pos[0], "alternatives." + axis.name,
                        axis.name +
                            " acts only on generate workloads and there are none; "
                            "its cells produce no jobs");
  }
}

std::vector<Job> MakeJobs(const Spec& spec, const std::vector<Cell>& cells) {
  std::vector<std::string> digests;
  // Hashed once per workload rather than once per job.
  for (const Workload& w : spec.workloads) digests.push_back(WorkloadDigest(w));
  std::vector<Job> jobs;
  for (int c = 0; c < static_cast<int>(cells.size()); ++c) {
    const Cell& cell = cells[c];
    int repeats = cell.is_baseline() || cell.repeated ? spec.baseline_repeats : spec.cell_repeats;
    // A job's id covers only the axes that act on its kind of workload, so the
    // teacher-forced jobs' ids do not depend on generation-only settings.
    std::string axes[2] = {CanonicalAxes(cell.coordinate, WorkloadKind::kTeacherForced),
                           CanonicalAxes(cell.coordinate, WorkloadKind::kGenerate)};
    for (int w = 0; w < static_cast<int>(spec.workloads.size()); ++w) {
      WorkloadKind kind = spec.workloads[w].kind;
      // A cell whose axis does not act on this kind of workload would only repeat
      // the baseline's jobs.
      if (!cell.is_baseline() && !cell.is_combination() &&
          !AxisApplies(spec.axes[cell.axis].name, kind)) {
        continue;
      }
      const std::string& canonical_axes = axes[kind == WorkloadKind::kGenerate ? 1 : 0];
      for (int r = 0; r < repeats; ++r) {
        std::string canonical =
            CanonicalJob(canonical_axes, spec.name, cell.requirements.model, r, digests[w]);
        jobs.push_back({JobIdOf(canonical), c, w, r});
      }
    }
  }
  return jobs;
}

PlanOutcome Expand(Spec spec, Diagnostics diagnostics) {
  PlanOutcome out;
  out.diagnostics = std::move(diagnostics);
  std::vector<Cell> cells = MakeCells(spec);
  CheckCells(spec, cells, out.diagnostics);
  CheckContextFits(spec, cells, out.diagnostics);
  if (out.diagnostics.has_errors()) return out;
  WarnUnusedSamplerAxes(spec, out.diagnostics);
  Plan plan;
  plan.jobs = MakeJobs(spec, cells);
  plan.cells = std::move(cells);
  plan.spec = std::move(spec);
  plan.warnings = out.diagnostics.warnings();
  out.plan = std::move(plan);
  return out;
}

}  // namespace

bool CellChanges(const Spec& spec, const Cell& cell, const std::string& axis) {
  if (!cell.is_combination()) return cell.axis >= 0 && spec.axes[cell.axis].name == axis;
  std::vector<std::string> names = spec.BisectAxisNames();
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    if (names[i] == axis && bisect::HasAxis(cell.set, i)) return true;
  }
  return false;
}

AxisSource AxisSourceOf(const Spec& spec, const Cell& cell, const std::string& axis) {
  const char* from = spec.bisect ? "bisect.from." : "baseline.";
  const Axis* a = spec.FindAxis(axis);
  if (a == nullptr) return {SourcePos{}, from + axis};
  if (!CellChanges(spec, cell, axis)) return {a->baseline_pos, from + axis};
  int alternative = std::max(cell.alternative, 0);
  return {a->alternative_pos[alternative],
          spec.bisect ? "bisect.to." + axis
                      : "alternatives." + axis + "[" + std::to_string(alternative) + "]"};
}

bool AxisApplies(std::string_view axis, WorkloadKind kind) {
  const AxisDef* def = FindAxis(axis);
  return kind == WorkloadKind::kGenerate || def == nullptr ||
         def->scope == AxisScope::kAllWorkloads;
}

Coordinate Plan::JobCoordinate(const Job& job) const {
  Coordinate out;
  WorkloadKind kind = WorkloadOf(job).kind;
  for (const auto& [axis, value] : CellOf(job).coordinate) {
    if (AxisApplies(axis, kind)) out.emplace(axis, value);
  }
  return out;
}

PlanOutcome ExpandSpec(Spec spec) { return Expand(std::move(spec), Diagnostics()); }

PlanOutcome PlanSpec(std::string_view toml_text, const std::string& file, SourceReader& reader) {
  ParsedSpec parsed = ParseSpec(toml_text, file, reader);
  if (!parsed.spec) return {std::nullopt, std::move(parsed.diagnostics)};
  // Cells are checked even when parsing found errors, so that all problems show at once.
  return Expand(std::move(*parsed.spec), std::move(parsed.diagnostics));
}

}  // namespace orch::planner
