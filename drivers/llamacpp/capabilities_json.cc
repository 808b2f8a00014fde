#include "drivers/llamacpp/capabilities_json.h"

#include <nlohmann/json.hpp>

#include "drivers/llamacpp/job_axes.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::ordered_json;

std::string_view KindName(AxisKind kind) {
  switch (kind) {
    case AxisKind::kInteger:
      return "integer";
    case AxisKind::kNumber:
      return "number";
    case AxisKind::kBoolean:
      return "boolean";
    case AxisKind::kString:
      break;
  }
  return "string";
}

ordered_json Strings(const std::vector<std::string_view>& values) {
  ordered_json out = ordered_json::array();
  for (std::string_view v : values) out.push_back(v);
  return out;
}

ordered_json AxisJson(const JobAxis& axis) {
  ordered_json out = {{"name", axis.name}, {"type", KindName(axis.kind)}};
  if (!axis.values.empty()) out["values"] = Strings(axis.values);
  if (!axis.aliases.empty()) {
    out["aliases"] = ordered_json::object();
    for (const auto& [alias, meaning] : axis.aliases) out["aliases"][alias] = meaning;
  }
  if (!axis.chars.empty()) out["chars"] = axis.chars;
  if (axis.pair) out["pair"] = true;
  if (axis.list) out["list"] = true;
  if (axis.kind == AxisKind::kInteger) {
    out["min"] = axis.min;
    out["max"] = axis.max;
  }
  out["sets"] = axis.sets;
  return out;
}

ordered_json ConditionJson(const Condition& c) {
  ordered_json out = {{"axis", c.axis}};
  if (!c.part.empty()) out["part"] = c.part;
  if (!c.in.empty()) out["in"] = Strings(c.in);
  if (!c.prefix.empty()) out["prefix"] = c.prefix;
  if (c.min) out["min"] = *c.min;
  return out;
}

}  // namespace

std::string CapabilitiesJson() {
  ordered_json axes = ordered_json::array();
  for (const JobAxis& axis : JobAxes()) axes.push_back(AxisJson(axis));
  ordered_json rules = ordered_json::array();
  for (const CombinationRule& rule : CombinationRules()) {
    rules.push_back({{"when", ConditionJson(rule.when)},
                     {"needs", ConditionJson(rule.needs)},
                     {"reason", rule.reason}});
  }
  ordered_json declaration = {{"schema", "orch.capabilities/1"},
                              {"engine", "llama.cpp"},
                              {"driver", "orch-driver-llamacpp"},
                              {"axes", axes},
                              {"rules", rules}};
  return declaration.dump(2) + "\n";
}

}  // namespace orch::drivers::llamacpp
