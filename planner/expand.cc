// One-axis-at-a-time expansion and the capability checks of every cell.
#include <algorithm>
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

std::vector<Cell> MakeCells(const Spec& spec) {
  std::vector<Cell> cells = {MakeCell(spec, -1, -1)};
  for (int axis : AlternativeOrder(spec)) {
    for (int alt = 0; alt < static_cast<int>(spec.axes[axis].alternatives.size()); ++alt) {
      cells.push_back(MakeCell(spec, axis, alt));
    }
  }
  return cells;
}

SourcePos CellPos(const Spec& spec, const Cell& cell, const CapabilityProblem& problem) {
  if (!cell.is_baseline()) return spec.axes[cell.axis].alternative_pos[cell.alternative];
  const Axis* axis = spec.FindAxis(problem.axes.front());
  return axis ? axis->baseline_pos : SourcePos{};
}

std::string CellField(const Spec& spec, const Cell& cell, const CapabilityProblem& problem) {
  if (cell.is_baseline()) return "baseline." + problem.axes.front();
  return "alternatives." + spec.axes[cell.axis].name + "[" + std::to_string(cell.alternative) + "]";
}

void WarnUndeclaredEngine(const Spec& spec, const Cell& cell, const std::string& engine,
                          Diagnostics& diagnostics) {
  SourcePos pos = cell.is_baseline() ? spec.FindAxis("engine")->baseline_pos
                                     : spec.axes[cell.axis].alternative_pos[cell.alternative];
  std::string field =
      cell.is_baseline() ? "baseline.engine" : CellField(spec, cell, {{"engine"}, ""});
  diagnostics.Warning(pos, field,
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
      diagnostics.Error(CellPos(spec, cell, problem), CellField(spec, cell, problem),
                        prefix + problem.message);
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
    int repeats = cell.is_baseline() ? spec.baseline_repeats : spec.cell_repeats;
    // A job's id covers only the axes that act on its kind of workload, so the
    // teacher-forced jobs' ids do not depend on generation-only settings.
    std::string axes[2] = {CanonicalAxes(cell.coordinate, WorkloadKind::kTeacherForced),
                           CanonicalAxes(cell.coordinate, WorkloadKind::kGenerate)};
    for (int w = 0; w < static_cast<int>(spec.workloads.size()); ++w) {
      WorkloadKind kind = spec.workloads[w].kind;
      // A cell whose axis does not act on this kind of workload would only repeat
      // the baseline's jobs.
      if (!cell.is_baseline() && !AxisApplies(spec.axes[cell.axis].name, kind)) continue;
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
