#include "planner/capability_declaration.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace orch::planner {
namespace {

using nlohmann::json;

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgument("capability declaration: " + field + ": " + what);
}

Result<std::string> StringAt(const json& object, const std::string& where, const char* key,
                             bool required) {
  auto it = object.find(key);
  if (it == object.end() && !required) return std::string();
  if (it == object.end() || !it->is_string()) return Bad(where + "." + key, "expected a string");
  return it->get<std::string>();
}

Result<std::vector<std::string>> StringsAt(const json& object, const std::string& where,
                                           const char* key) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end()) return out;
  if (!it->is_array()) return Bad(where + "." + key, "expected an array of strings");
  for (const json& item : *it) {
    if (!item.is_string()) return Bad(where + "." + key, "expected an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<std::optional<double>> NumberAt(const json& object, const std::string& where,
                                       const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return std::optional<double>();
  if (!it->is_number()) return Bad(where + "." + key, "expected a number");
  return std::optional<double>(it->get<double>());
}

Result<DeclaredType> TypeOf(const std::string& name, const std::string& where) {
  if (name == "string") return DeclaredType::kString;
  if (name == "integer") return DeclaredType::kInteger;
  if (name == "number") return DeclaredType::kNumber;
  if (name == "boolean") return DeclaredType::kBoolean;
  return Bad(where + ".type", "expected string, integer, number or boolean, got \"" + name + "\"");
}

Result<DeclaredAxis> ParseAxis(const json& item, const std::string& where) {
  if (!item.is_object()) return Bad(where, "expected an object");
  DeclaredAxis axis;
  ORCH_ASSIGN_OR_RETURN(axis.name, StringAt(item, where, "name", true));
  ORCH_ASSIGN_OR_RETURN(std::string type, StringAt(item, where, "type", true));
  ORCH_ASSIGN_OR_RETURN(axis.type, TypeOf(type, where));
  ORCH_ASSIGN_OR_RETURN(axis.values, StringsAt(item, where, "values"));
  ORCH_ASSIGN_OR_RETURN(axis.chars, StringAt(item, where, "chars", false));
  ORCH_ASSIGN_OR_RETURN(axis.min, NumberAt(item, where, "min"));
  ORCH_ASSIGN_OR_RETURN(axis.max, NumberAt(item, where, "max"));
  ORCH_ASSIGN_OR_RETURN(axis.sets, StringAt(item, where, "sets", false));
  axis.pair = item.value("pair", false);
  axis.list = item.value("list", false);
  return axis;
}

Result<ValueCondition> ParseCondition(const json& rule, const std::string& where, const char* key) {
  std::string at = where + "." + key;
  auto it = rule.find(key);
  if (it == rule.end() || !it->is_object()) return Bad(at, "expected an object");
  ValueCondition c;
  ORCH_ASSIGN_OR_RETURN(c.axis, StringAt(*it, at, "axis", true));
  ORCH_ASSIGN_OR_RETURN(c.part, StringAt(*it, at, "part", false));
  ORCH_ASSIGN_OR_RETURN(c.in, StringsAt(*it, at, "in"));
  ORCH_ASSIGN_OR_RETURN(c.prefix, StringAt(*it, at, "prefix", false));
  if (it->contains("min")) {
    if (!(*it)["min"].is_number_integer()) return Bad(at + ".min", "expected an integer");
    c.min = (*it)["min"].get<std::int64_t>();
  }
  if (c.part != "" && c.part != "k" && c.part != "v")
    return Bad(at + ".part", "expected \"k\" or \"v\", got \"" + c.part + "\"");
  return c;
}

Result<CombinationRule> ParseRule(const json& item, const std::string& where) {
  if (!item.is_object()) return Bad(where, "expected an object");
  CombinationRule rule;
  ORCH_ASSIGN_OR_RETURN(rule.when, ParseCondition(item, where, "when"));
  ORCH_ASSIGN_OR_RETURN(rule.needs, ParseCondition(item, where, "needs"));
  ORCH_ASSIGN_OR_RETURN(rule.reason, StringAt(item, where, "reason", true));
  return rule;
}

template <typename T, typename Parse>
Result<std::vector<T>> ParseArray(const json& doc, const char* key, Parse parse) {
  std::vector<T> out;
  auto it = doc.find(key);
  if (it == doc.end()) return out;
  if (!it->is_array()) return Bad(key, "expected an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    ORCH_ASSIGN_OR_RETURN(T item,
                          parse((*it)[i], std::string(key) + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(item));
  }
  return out;
}

std::string_view Part(std::string_view value, std::string_view part) {
  std::size_t slash = value.find('/');
  if (part == "k") return value.substr(0, slash);
  if (part == "v") return slash == std::string_view::npos ? value : value.substr(slash + 1);
  return value;
}

std::string JoinValues(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

}  // namespace

const DeclaredAxis* EngineCapabilities::FindAxis(std::string_view name) const {
  for (const DeclaredAxis& axis : axes)
    if (axis.name == name) return &axis;
  return nullptr;
}

Result<EngineCapabilities> ParseCapabilityDeclaration(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Bad("document", "not a JSON object");
  ORCH_ASSIGN_OR_RETURN(std::string schema, StringAt(doc, "document", "schema", true));
  if (schema != "orch.capabilities/1")
    return Bad("schema", "expected \"orch.capabilities/1\", got \"" + schema + "\"");
  EngineCapabilities caps;
  ORCH_ASSIGN_OR_RETURN(caps.family, StringAt(doc, "document", "engine", true));
  ORCH_ASSIGN_OR_RETURN(caps.driver, StringAt(doc, "document", "driver", false));
  ORCH_ASSIGN_OR_RETURN(caps.axes, ParseArray<DeclaredAxis>(doc, "axes", ParseAxis));
  ORCH_ASSIGN_OR_RETURN(caps.rules, ParseArray<CombinationRule>(doc, "rules", ParseRule));
  return caps;
}

bool Holds(const ValueCondition& condition, const AxisValue& value) {
  if (condition.min && !(value.is_int() && value.as_int() >= *condition.min)) return false;
  std::string text = value.ToText();
  std::string_view part = Part(text, condition.part);
  if (!condition.in.empty() &&
      std::find(condition.in.begin(), condition.in.end(), part) == condition.in.end())
    return false;
  return part.starts_with(condition.prefix);
}

std::string DescribeCondition(const ValueCondition& c) {
  std::string subject =
      c.part.empty() ? c.axis
                     : "the " + std::string(c.part == "k" ? "K" : "V") + " half of " + c.axis;
  std::vector<std::string> tests;
  if (c.in.size() == 1) tests.push_back(subject + " = \"" + c.in[0] + "\"");
  if (c.in.size() > 1) tests.push_back(subject + " one of " + JoinValues(c.in));
  if (!c.prefix.empty()) tests.push_back(subject + " = \"" + c.prefix + "...\"");
  if (c.min) tests.push_back(subject + " >= " + std::to_string(*c.min));
  std::string out;
  for (const std::string& t : tests) out += (out.empty() ? "" : " and ") + t;
  return out;
}

}  // namespace orch::planner
