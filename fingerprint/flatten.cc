#include "fingerprint/flatten.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fingerprint/fingerprint_json.h"

namespace orch::fingerprint {
namespace {

using nlohmann::json;

std::string DumpValue(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsPlainKey(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

bool IsLeaf(const json& value) {
  if (value.is_object()) {
    return value.empty() || (value.size() == 1 && value.contains("unknown"));
  }
  if (value.is_array()) {
    return std::none_of(value.begin(), value.end(),
                        [](const json& item) { return item.is_structured(); });
  }
  return true;
}

void Walk(const std::string& path, const json& value, std::vector<FlatField>& out) {
  if (IsLeaf(value)) {
    FlatField field{GroupOfPath(path), path, DumpValue(value), std::nullopt};
    if (value.is_array()) {
      field.items.emplace();
      for (const json& item : value) field.items->push_back(DumpValue(item));
    }
    out.push_back(std::move(field));
  } else if (value.is_object()) {
    for (const auto& item : value.items()) Walk(ChildPath(path, item.key()), item.value(), out);
  } else {
    for (std::size_t i = 0; i < value.size(); ++i) {
      Walk(path + "[" + std::to_string(i) + "]", value[i], out);
    }
  }
}

std::string DisplayScalar(const json& value) {
  return value.is_string() ? value.get<std::string>() : DumpValue(value);
}

}  // namespace

std::vector<FlatField> FlattenFingerprint(const Fingerprint& fingerprint) {
  std::vector<FlatField> fields;
  Walk("", json::parse(ToCanonicalJson(fingerprint)), fields);
  std::sort(fields.begin(), fields.end(),
            [](const FlatField& a, const FlatField& b) { return a.path < b.path; });
  return fields;
}

std::string ChildPath(const std::string& path, const std::string& key) {
  if (IsPlainKey(key)) return path.empty() ? key : path + "." + key;
  return path + "[" + DumpValue(key) + "]";
}

std::string DisplayValue(const std::optional<std::string>& canonical_json) {
  if (!canonical_json) return "(absent)";
  json value = json::parse(*canonical_json);
  if (value.is_object() && value.contains("unknown")) {
    return "unknown (" + DisplayScalar(value["unknown"]) + ")";
  }
  if (value.is_object() && value.empty()) return "(none)";
  if (!value.is_array()) return DisplayScalar(value);
  if (value.empty()) return "(none)";
  std::string joined;
  for (const json& item : value) joined += (joined.empty() ? "" : " ") + DisplayScalar(item);
  return joined;
}

DiffGroup GroupOfPath(const std::string& path) {
  std::string top = path.substr(0, path.find_first_of(".["));
  if (top == "host") return DiffGroup::kHardware;
  if (top == "gpu") return DiffGroup::kGpuDriver;
  if (top == "engines") return DiffGroup::kEngine;
  if (top == "models") return DiffGroup::kModel;
  return DiffGroup::kOther;
}

}  // namespace orch::fingerprint
