#include "planner/context_check.h"

#include <string>

namespace orch::planner {
namespace {

struct Need {
  std::int64_t tokens = 0;
  std::string what;  // "16 positions", "at least 9 tokens (...)"
};

Need NeedOf(const Workload& w) {
  if (w.kind == WorkloadKind::kTeacherForced)
    return {w.positions, "evaluates " + std::to_string(w.positions) + " positions"};
  std::int64_t tokens = static_cast<std::int64_t>(w.max_tokens) + 1;
  return {tokens, "needs at least " + std::to_string(tokens) + " tokens (max_tokens = " +
                      std::to_string(w.max_tokens) + " plus a prompt of at least one token)"};
}

bool SetsContext(const Spec& spec, const Cell& cell) {
  if (cell.coordinate.count("ctx") == 0 || !cell.coordinate.at("ctx").is_int()) return false;
  return cell.is_baseline() || CellChanges(spec, cell, "ctx");
}

void CheckCell(const Spec& spec, const Cell& cell, Diagnostics& diagnostics) {
  std::int64_t ctx = cell.coordinate.at("ctx").as_int();
  auto [pos, field] = AxisSourceOf(spec, cell, "ctx");
  for (const Workload& w : spec.workloads) {
    Need need = NeedOf(w);
    if (need.tokens <= ctx) continue;
    diagnostics.Error(pos, field,
                      "cell " + cell.label + ": ctx = " + std::to_string(ctx) +
                          " is smaller than workload " + Quote(w.name) + ", which " + need.what +
                          "; raise ctx to at least " + std::to_string(need.tokens));
  }
}

}  // namespace

void CheckContextFits(const Spec& spec, const std::vector<Cell>& cells, Diagnostics& diagnostics) {
  for (const Cell& cell : cells) {
    if (SetsContext(spec, cell)) CheckCell(spec, cell, diagnostics);
  }
}

}  // namespace orch::planner
