#include "planner/spec.h"

namespace orch::planner {

std::string Model::RequirementFor(const std::string& quant) const {
  auto variant = variants.find(quant);
  if (variant != variants.end()) return "sha256:" + variant->second.sha256;
  return is_synth() ? "synth:" + synth : "sha256:" + sha256;
}

const char* WorkloadKindName(WorkloadKind kind) {
  return kind == WorkloadKind::kGenerate ? "generate" : "teacher_forced";
}

const Axis* Spec::FindAxis(const std::string& name) const {
  for (const Axis& axis : axes) {
    if (axis.name == name) return &axis;
  }
  return nullptr;
}

std::vector<std::string> Spec::BisectAxisNames() const {
  std::vector<std::string> names;
  if (bisect) {
    for (int axis : bisect->axes) names.push_back(axes[axis].name);
  }
  return names;
}

}  // namespace orch::planner
