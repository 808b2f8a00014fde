#include "plan_document/plan_document.h"

#include <nlohmann/json.hpp>

namespace orch::plan_document {

std::string ScalarText(const Scalar& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  return std::visit([](const auto& v) { return nlohmann::json(v).dump(); }, value);
}

std::uint64_t Workload::MostPositions() const {
  if (positions && *positions > 0) return static_cast<std::uint64_t>(*positions);
  if (max_tokens && *max_tokens > 0) return static_cast<std::uint64_t>(*max_tokens);
  return 0;
}

std::uint32_t Document::FindWorkload(const std::string& name) const {
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].name == name) return static_cast<std::uint32_t>(i);
  }
  return kNone;
}

std::uint32_t Interner::Add(Coordinate coordinate) {
  auto [slot, added] = coordinates_.try_emplace(
      coordinate, static_cast<std::uint32_t>(document_.coordinates.size()));
  if (added) document_.coordinates.push_back(std::move(coordinate));
  return slot->second;
}

std::uint32_t Interner::Add(const Requirements& r) {
  std::vector<std::string> key = {r.engine, r.hardware, std::to_string(r.gpus), r.model};
  auto [slot, added] = requirements_.try_emplace(
      std::move(key), static_cast<std::uint32_t>(document_.requirements.size()));
  if (added) document_.requirements.push_back(r);
  return slot->second;
}

}  // namespace orch::plan_document
