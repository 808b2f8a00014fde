#include "report/effective.h"

#include <nlohmann/json.hpp>

namespace orch::report {
namespace {

using PlainJson = nlohmann::json;

std::map<std::string, std::string> StringMap(const PlainJson& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_null()) continue;
    out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return out;
}

std::string Normal(const std::string& value) {
  if (value == "true") return "on";
  if (value == "false") return "off";
  const std::size_t slash = value.find('/');
  if (slash != std::string::npos && value.substr(0, slash) == value.substr(slash + 1)) {
    return value.substr(0, slash);
  }
  return value;
}

// A requested value that leaves the choice to the engine.
bool Resolved(const std::string& axis, const std::string& requested) {
  return requested == "auto" || requested == "best" || (axis == "threads" && requested == "0");
}

std::string Describe(const EffectiveDifference& d) {
  return d.axis + " " + d.requested + " ran as " + d.effective + (d.why.empty() ? "" : " " + d.why);
}

}  // namespace

EffectiveSettings ParseEffective(const std::string& summary) {
  const PlainJson parsed = PlainJson::parse(summary, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return {};
  for (const char* frame : {"done", "hello"}) {
    const PlainJson& part = parsed.value(frame, PlainJson());
    if (!part.is_object() || !part.contains("effective")) continue;
    const PlainJson& effective = part["effective"];
    if (!effective.is_object()) continue;
    return {StringMap(effective.value("axes", PlainJson())),
            StringMap(effective.value("why", PlainJson()))};
  }
  return {};
}

Coordinate CellCoordinate(const Coordinate& baseline, const std::string& axis,
                          const std::string& value) {
  Coordinate out = baseline;
  if (axis.empty()) return out;
  for (auto& [name, v] : out) {
    if (name == axis) {
      v = value;
      return out;
    }
  }
  out.emplace_back(axis, value);
  return out;
}

std::vector<EffectiveDifference> EffectiveDifferences(const Coordinate& coordinate,
                                                      const EffectiveSettings& effective) {
  std::vector<EffectiveDifference> out;
  for (const auto& [axis, requested] : coordinate) {
    auto it = effective.axes.find(axis);
    if (it == effective.axes.end() || Resolved(axis, requested)) continue;
    if (Normal(requested) == Normal(it->second)) continue;
    auto why = effective.why.find(axis);
    out.push_back({axis, requested, it->second, why == effective.why.end() ? "" : why->second});
  }
  return out;
}

bool SameEffective(const EffectiveSettings& baseline, const EffectiveSettings& cell,
                   const std::string& axis) {
  if (!baseline.known() || !cell.known() || !cell.axes.contains(axis)) return false;
  if (baseline.axes.size() != cell.axes.size()) return false;
  for (const auto& [name, value] : cell.axes) {
    auto it = baseline.axes.find(name);
    if (it == baseline.axes.end() || Normal(it->second) != Normal(value)) return false;
  }
  return true;
}

std::string RanAsText(const std::string& axis, const std::vector<EffectiveDifference>& baseline,
                      const std::vector<EffectiveDifference>& cell) {
  std::string out;
  for (const EffectiveDifference& d : cell) {
    if (d.axis == axis) out = Describe(d);
  }
  for (const EffectiveDifference& d : baseline) {
    if (d.axis == axis) out += (out.empty() ? "" : "; ") + ("baseline's " + Describe(d));
  }
  return out;
}

}  // namespace orch::report
