#include "plan_document/plan_document.h"

#include <algorithm>
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

void KeepJobs(Document& document, const std::function<bool(const Job&)>& keep) {
  std::erase_if(document.jobs, [&](const Job& job) { return !keep(job); });
}

std::uint32_t Document::FindWorkload(const std::string& name) const {
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].name == name) return static_cast<std::uint32_t>(i);
  }
  return kNone;
}

CoordinateView::Iterator::value_type CoordinateView::Iterator::operator*() const {
  return {table_->AxisName(at_->axis), table_->Value(at_->value)};
}

const Scalar* CoordinateView::Find(std::string_view axis) const {
  for (const auto& [name, value] : *this) {
    if (name == axis) return &value;
  }
  return nullptr;
}

Coordinate CoordinateView::ToCoordinate() const {
  Coordinate out;
  out.reserve(size());
  for (const auto& [axis, value] : *this) out.emplace_back(axis, value);
  return out;
}

bool operator==(const CoordinateView& a, const CoordinateView& b) {
  if (a.table_ == b.table_) return std::equal(a.begin_, a.end_, b.begin_, b.end_);
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.first == y.first && x.second == y.second;
  });
}

bool operator==(const CoordinateView& a, const Coordinate& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.first == y.first && x.second == y.second;
  });
}

std::vector<CoordinateEntry> CoordinateTable::Encode(const Coordinate& coordinate) {
  std::vector<CoordinateEntry> entries;
  entries.reserve(coordinate.size());
  for (const auto& [axis, value] : coordinate) {
    entries.push_back({axes_.Add(axis), values_.Add(value)});
  }
  return entries;
}

std::uint32_t CoordinateTable::Append(const std::vector<CoordinateEntry>& entries) {
  auto index = static_cast<std::uint32_t>(size());
  entries_.insert(entries_.end(), entries.begin(), entries.end());
  starts_.push_back(static_cast<std::uint32_t>(entries_.size()));
  return index;
}

void CoordinateTable::shrink_to_fit() {
  entries_.shrink_to_fit();
  starts_.shrink_to_fit();
}

bool Interner::ByEntries::operator()(std::uint32_t a, std::uint32_t b) const {
  auto [a0, a1] = table->Entries(a);
  auto [b0, b1] = table->Entries(b);
  return std::lexicographical_compare(a0, a1, b0, b1);
}

bool Interner::ByEntries::operator()(const std::vector<CoordinateEntry>& a, std::uint32_t b) const {
  auto [b0, b1] = table->Entries(b);
  return std::lexicographical_compare(a.begin(), a.end(), b0, b1);
}

bool Interner::ByEntries::operator()(std::uint32_t a, const std::vector<CoordinateEntry>& b) const {
  auto [a0, a1] = table->Entries(a);
  return std::lexicographical_compare(a0, a1, b.begin(), b.end());
}

Interner::Interner(Document& document)
    : document_(document),
      coordinates_(ByEntries{&document.coordinates}),
      requirements_(ByEntry<Requirements>{&document.requirements}) {
  for (std::uint32_t i = 0; i < document.coordinates.size(); ++i) coordinates_.insert(i);
  for (std::uint32_t i = 0; i < document.requirements.size(); ++i) requirements_.insert(i);
}

bool Interner::Less(const Requirements& a, const Requirements& b) {
  return std::tie(a.engine, a.hardware, a.gpus, a.model) <
         std::tie(b.engine, b.hardware, b.gpus, b.model);
}

std::uint32_t Interner::Add(const Coordinate& coordinate) {
  std::vector<CoordinateEntry> entries = document_.coordinates.Encode(coordinate);
  if (auto it = coordinates_.find(entries); it != coordinates_.end()) return *it;
  std::uint32_t index = document_.coordinates.Append(entries);
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
