#include "plan_document/plan_document.h"

#include <nlohmann/json.hpp>
#include <tuple>

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

Interner::Interner(Document& document)
    : document_(document),
      coordinates_(ByEntry<Coordinate>{&document.coordinates}),
      requirements_(ByEntry<Requirements>{&document.requirements}) {
  for (std::uint32_t i = 0; i < document.coordinates.size(); ++i) coordinates_.insert(i);
  for (std::uint32_t i = 0; i < document.requirements.size(); ++i) requirements_.insert(i);
}

bool Interner::Less(const Requirements& a, const Requirements& b) {
  return std::tie(a.engine, a.hardware, a.gpus, a.model) <
         std::tie(b.engine, b.hardware, b.gpus, b.model);
}

std::uint32_t Interner::Add(Coordinate coordinate) {
  if (auto it = coordinates_.find(coordinate); it != coordinates_.end()) return *it;
  auto index = static_cast<std::uint32_t>(document_.coordinates.size());
  document_.coordinates.push_back(std::move(coordinate));
  coordinates_.insert(index);
  return index;
}

std::uint32_t Interner::Add(const Requirements& requirements) {
  if (auto it = requirements_.find(requirements); it != requirements_.end()) return *it;
  auto index = static_cast<std::uint32_t>(document_.requirements.size());
  document_.requirements.push_back(requirements);
  requirements_.insert(index);
  return index;
}

}  // namespace orch::plan_document
