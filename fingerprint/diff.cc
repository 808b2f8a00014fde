#include "fingerprint/diff.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/flatten.h"

namespace orch::fingerprint {
namespace {

using nlohmann::json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsUnknownValue(const json& value) {
  return value.is_object() && value.size() == 1 && value.contains("unknown");
}

bool HasStructuredItem(const json& array) {
  return std::any_of(array.begin(), array.end(),
                     [](const json& item) { return item.is_structured(); });
}

const json* Member(const json* object, const std::string& key) {
  if (object == nullptr) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

const json* Item(const json* array, std::size_t index) {
  return array != nullptr && index < array->size() ? &(*array)[index] : nullptr;
}

// Walks both trees together. Objects (not unknown markers) and lists of objects are
// descended into; anything else, or a subtree present on one side only, is compared whole
// and reported once at its own path.
void DiffNodes(const std::string& path, const json* a, const json* b,
               std::vector<FieldDifference>& out) {
  if (a && b && a->is_object() && b->is_object() && !IsUnknownValue(*a) && !IsUnknownValue(*b)) {
    std::set<std::string> keys;
    for (const auto& item : a->items()) keys.insert(item.key());
    for (const auto& item : b->items()) keys.insert(item.key());
    for (const std::string& key : keys) {
      DiffNodes(ChildPath(path, key), Member(a, key), Member(b, key), out);
    }
    return;
  }
  if (a && b && a->is_array() && b->is_array() &&
      (HasStructuredItem(*a) || HasStructuredItem(*b))) {
    for (std::size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
      DiffNodes(path + "[" + std::to_string(i) + "]", Item(a, i), Item(b, i), out);
    }
    return;
  }
  if (a && b && *a == *b) return;
  out.push_back({GroupOfPath(path), path, a ? std::optional(Dump(*a)) : std::nullopt,
                 b ? std::optional(Dump(*b)) : std::nullopt});
}

// For lists (CPU flags): "only in A: x y" rather than both whole lists.
std::vector<std::string> Minus(const json& from, const json& remove) {
  std::vector<std::string> left;
  for (const json& item : from) {
    if (std::find(remove.begin(), remove.end(), item) == remove.end()) {
      left.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }
  }
  return left;
}

std::string JoinOrNone(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : " ") + item;
  return joined;
}

void RenderDifference(const FieldDifference& d, std::ostringstream& out) {
  out << "  " << d.field << "\n";
  if (d.a && d.b) {
    json a = json::parse(*d.a);
    json b = json::parse(*d.b);
    if (a.is_array() && b.is_array()) {
      out << "    only in A: " << JoinOrNone(Minus(a, b)) << "\n";
      out << "    only in B: " << JoinOrNone(Minus(b, a)) << "\n";
      return;
    }
  }
  out << "    A: " << DisplayValue(d.a) << "\n";
  out << "    B: " << DisplayValue(d.b) << "\n";
}

json ValueOrNull(const std::optional<std::string>& value) {
  return value ? json::parse(*value) : json(nullptr);
}

}  // namespace

std::string DiffGroupName(DiffGroup group) {
  switch (group) {
    case DiffGroup::kHardware:
      return "hardware";
    case DiffGroup::kGpuDriver:
      return "gpu_driver";
    case DiffGroup::kEngine:
      return "engine";
    case DiffGroup::kModel:
      return "model";
    case DiffGroup::kOther:
      return "other";
  }
  return "other";
}

FingerprintDiff Diff(const Fingerprint& a, const Fingerprint& b) {
  FingerprintDiff diff{FingerprintId(a), FingerprintId(b), {}};
  json tree_a = json::parse(ToCanonicalJson(a));
  json tree_b = json::parse(ToCanonicalJson(b));
  DiffNodes("", &tree_a, &tree_b, diff.differences);
  std::stable_sort(
      diff.differences.begin(), diff.differences.end(),
      [](const FieldDifference& x, const FieldDifference& y) { return x.group < y.group; });
  return diff;
}

std::string RenderDiffText(const FingerprintDiff& diff) {
  std::ostringstream out;
  if (diff.empty()) {
    out << "fingerprints are identical: " << diff.a_id << "\n";
    return out.str();
  }
  out << "A: " << diff.a_id << "\nB: " << diff.b_id << "\n"
      << diff.differences.size()
      << (diff.differences.size() == 1 ? " field differs" : " fields differ") << "\n";
  std::optional<DiffGroup> group;
  for (const FieldDifference& d : diff.differences) {
    if (group != d.group) out << "\n" << DiffGroupName(d.group) << "\n";
    group = d.group;
    RenderDifference(d, out);
  }
  return out.str();
}

std::string RenderDiffJson(const FingerprintDiff& diff) {
  json differences = json::array();
  for (const FieldDifference& d : diff.differences) {
    differences.push_back({{"group", DiffGroupName(d.group)},
                           {"field", d.field},
                           {"a", ValueOrNull(d.a)},
                           {"b", ValueOrNull(d.b)}});
  }
  json out = {{"a", diff.a_id}, {"b", diff.b_id}, {"differences", differences}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace orch::fingerprint
