#include "coordinator/matchmaker.h"

#include <algorithm>

namespace orch::coordinator {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool ModelAvailable(const std::string& model, const protocol::Capabilities& has) {
  if (model.empty() || model.starts_with("synth:")) return true;
  return Contains(has.model_hashes, model);
}

}  // namespace

bool Satisfies(const protocol::Requirements& needs, const protocol::Capabilities& has) {
  if (!needs.engine.empty() && !Contains(has.engines, needs.engine)) return false;
  if (!needs.hardware.empty() && needs.hardware != has.hardware_class) return false;
  if (needs.gpus > has.gpus) return false;
  return ModelAvailable(needs.model, has);
}

std::string RequirementKey(const protocol::Requirements& needs) {
  std::string key;
  key.reserve(needs.engine.size() + needs.hardware.size() + needs.model.size() + 16);
  key.append(needs.engine).push_back('\n');
  key.append(needs.hardware).push_back('\n');
  key.append(std::to_string(needs.gpus)).push_back('\n');
  key.append(needs.model);
  return key;
}

}  // namespace orch::coordinator
