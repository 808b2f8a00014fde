#include "planner/capabilities.h"

#include <algorithm>

#include "base/check.h"
#include "planner/diagnostics.h"

namespace orch::planner {
namespace {

std::string Join(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

bool Listed(const DeclaredAxis& axis, std::string_view value) {
  return axis.values.empty() ||
         std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end();
}

// Every piece of `text` split at `separator` is a declared value.
bool AllListed(const DeclaredAxis& axis, std::string_view text, char separator) {
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t end = std::min(text.find(separator, begin), text.size());
    if (!Listed(axis, text.substr(begin, end - begin))) return false;
    begin = end + 1;
  }
  return true;
}

bool AcceptsString(const DeclaredAxis& axis, std::string_view text) {
  if (axis.pair) return AllListed(axis, text, '/');
  if (axis.list) return AllListed(axis, text, ',');
  if (!axis.chars.empty() && text.find_first_not_of(axis.chars) != std::string_view::npos)
    return false;
  return Listed(axis, text);
}

std::string Expected(const DeclaredAxis& axis) {
  if (!axis.chars.empty()) return "expected characters from " + axis.chars;
  if (axis.pair) return "expected T or \"K/V\" with T one of " + Join(axis.values);
  if (axis.list) return "expected a comma list of " + Join(axis.values);
  return "expected one of " + Join(axis.values);
}

std::string TypeName(DeclaredType type) {
  switch (type) {
    case DeclaredType::kString:
      return "a string";
    case DeclaredType::kInteger:
      return "an integer";
    case DeclaredType::kNumber:
      return "a number";
    case DeclaredType::kBoolean:
      return "a boolean";
  }
  return "?";
}

bool TypeMatches(DeclaredType declared, const AxisValue& value) {
  switch (declared) {
    case DeclaredType::kString:
      return value.is_string();
    case DeclaredType::kInteger:
      return value.is_int();
    case DeclaredType::kNumber:
      return value.is_int() || value.is_float();
    case DeclaredType::kBoolean:
      return value.is_bool();
  }
  return false;
}

std::optional<std::string> ValueProblem(const AcceptedValues& accepted, const AxisValue& value) {
  const DeclaredAxis& axis = *accepted.declared;
  if (!TypeMatches(axis.type, value))
    return "declares " + axis.name + " as " + TypeName(axis.type) + ", got " + Quote(value);
  if (value.is_string()) {
    if (AcceptsString(axis, value.as_string())) return std::nullopt;
    return "does not support " + axis.name + " = " + Quote(value) + "; " + Expected(axis);
  }
  if (!value.is_int() && !value.is_float()) return std::nullopt;
  double v = value.is_int() ? static_cast<double>(value.as_int()) : value.as_float();
  if (v >= accepted.min && v <= accepted.max) return std::nullopt;
  return "accepts " + axis.name + " in [" + FormatDouble(accepted.min) + ", " +
         FormatDouble(accepted.max) + "], got " + value.ToText();
}

std::optional<CapabilityProblem> CheckAxis(const EngineCapabilities& engine,
                                           const std::string& axis, const AxisValue& value) {
  std::optional<AcceptedValues> accepted = AcceptedFor(engine, axis);
  if (!accepted) {
    return CapabilityProblem{{axis},
                             engine.family + " has no axis " + Quote(axis) +
                                 "; remove it for this engine, or pass it as knob." + axis +
                                 " if the driver understands it",
                             ProblemKind::kUnknownAxis};
  }
  std::optional<std::string> problem = ValueProblem(*accepted, value);
  if (!problem) return std::nullopt;
  return CapabilityProblem{{axis}, engine.family + " " + *problem, ProblemKind::kValue};
}

std::optional<CapabilityProblem> CheckRule(const CombinationRule& rule, const Coordinate& c) {
  auto when = c.find(rule.when.axis);
  auto needs = c.find(rule.needs.axis);
  if (when == c.end() || needs == c.end()) return std::nullopt;
  if (!Holds(rule.when, when->second) || Holds(rule.needs, needs->second)) return std::nullopt;
  return CapabilityProblem{{rule.when.axis, rule.needs.axis},
                           rule.when.axis + " = " + Quote(when->second) + " needs " +
                               DescribeCondition(rule.needs) + ", but " + rule.needs.axis + " = " +
                               Quote(needs->second) + ": " + rule.reason,
                           ProblemKind::kCombination};
}

std::vector<EngineCapabilities> ParseEmbedded() {
  std::vector<EngineCapabilities> out;
  for (std::string_view text : EmbeddedDeclarations()) {
    Result<EngineCapabilities> caps = ParseCapabilityDeclaration(text);
    ORCH_CHECK(caps.ok()) << "embedded " << caps.status().ToString();
    out.push_back(std::move(*caps));
  }
  return out;
}

}  // namespace

std::string_view EngineFamily(std::string_view engine) {
  return engine.substr(0, engine.find('@'));
}

const EngineCapabilities* FindEngineCapabilities(std::string_view family) {
  static const std::vector<EngineCapabilities> kEngines = ParseEmbedded();
  for (const EngineCapabilities& engine : kEngines) {
    if (engine.family == family) return &engine;
  }
  return nullptr;
}

std::optional<AcceptedValues> AcceptedFor(const EngineCapabilities& engine, std::string_view axis) {
  const DeclaredAxis* declared = engine.FindAxis(axis);
  const AxisDef* def = FindAxis(axis);
  if (declared == nullptr || def == nullptr) return std::nullopt;
  AcceptedValues accepted{def, declared, def->min, def->max};
  if (declared->min) accepted.min = std::max(accepted.min, *declared->min);
  if (declared->max) accepted.max = std::min(accepted.max, *declared->max);
  return accepted;
}

std::vector<CapabilityProblem> CheckCoordinate(const EngineCapabilities& engine,
                                               const Coordinate& coordinate) {
  std::vector<CapabilityProblem> problems;
  for (const auto& [axis, value] : coordinate) {
    if (axis.starts_with(kKnobPrefix)) continue;
    if (auto problem = CheckAxis(engine, axis, value)) problems.push_back(std::move(*problem));
  }
  for (const CombinationRule& rule : engine.rules) {
    if (auto problem = CheckRule(rule, coordinate)) problems.push_back(std::move(*problem));
  }
  return problems;
}

}  // namespace orch::planner
