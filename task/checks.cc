// The check grammar of task/checks.h: parsing (every key and value checked) and
// evaluation (pure).
#include "task/checks.h"

#include "task/check_tree.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

namespace orch::task {

using Json = nlohmann::json;

namespace {

std::string ParseShown(const Json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

std::string ParseShownText(std::string_view text) {
  std::string out = Json(std::string(text)).dump();
  return out.size() > 80 ? out.substr(0, 77) + "...\"" : out;
}

Status CheckError(const std::string& where, const std::string& what) {
  return InvalidArgument(where + ": " + what);
}

Result<CheckPtr> ParseCheckJson(const Json& json, const std::string& where);

Result<std::vector<CheckPtr>> ParseCheckList(const Json& list, const std::string& where) {
  if (!list.is_array() || list.empty()) {
    return CheckError(where, "expected a non-empty array of checks, got " + ParseShown(list));
  }
  std::vector<CheckPtr> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    ORCH_ASSIGN_OR_RETURN(CheckPtr child,
                          ParseCheckJson(list[i], where + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(child));
  }
  return out;
}

// The string value of `key`, or an error naming it.
Result<std::string> StringOf(const Json& json, const char* key, const std::string& where) {
  const Json& value = json.at(key);
  if (!value.is_string()) {
    return CheckError(where + "." + key, "expected a string, got " + ParseShown(value));
  }
  return value.get<std::string>();
}

Status OnlyKeys(const Json& json, std::initializer_list<const char*> allowed,
                const std::string& where) {
  for (const auto& [key, value] : json.items()) {
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) {
      std::string list;
      for (const char* name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      return CheckError(where + "." + key, "unknown key (allowed here: " + list + ")");
    }
  }
  return Status::Ok();
}

Result<CheckPtr> ParseToolCall(const Json& spec, const std::string& where) {
  auto check = std::make_shared<Check>();
  check->kind = Check::Kind::kToolCall;
  if (!spec.is_object()) return CheckError(where, "expected an object, got " + ParseShown(spec));
  ORCH_RETURN_IF_ERROR(OnlyKeys(spec, {"name", "arguments", "optional", "allow_extra"}, where));
  if (!spec.contains("name")) return CheckError(where + ".name", "required");
  ORCH_ASSIGN_OR_RETURN(check->function, StringOf(spec, "name", where));
  if (spec.contains("arguments")) {
    const Json& args = spec["arguments"];
    if (!args.is_object()) {
      return CheckError(where + ".arguments", "expected an object, got " + ParseShown(args));
    }
    for (const auto& [name, accepted] : args.items()) {
      if (!accepted.is_array() || accepted.empty()) {
        return CheckError(
            where + ".arguments." + name,
            "expected a non-empty array of accepted values, got " + ParseShown(accepted));
      }
      check->arguments[name] = std::vector<Json>(accepted.begin(), accepted.end());
    }
  }
  if (spec.contains("optional")) {
    const Json& optional = spec["optional"];
    if (!optional.is_array()) {
      return CheckError(where + ".optional",
                        "expected an array of names, got " + ParseShown(optional));
    }
    for (const Json& name : optional) {
      if (!name.is_string() || !check->arguments.contains(name.get<std::string>())) {
        return CheckError(
            where + ".optional",
            ParseShown(name) + " is not one of the arguments listed in \"arguments\"");
      }
      check->optional.insert(name.get<std::string>());
    }
  }
  if (spec.contains("allow_extra")) {
    if (!spec["allow_extra"].is_boolean()) {
      return CheckError(where + ".allow_extra", "expected true or false");
    }
    check->allow_extra = spec["allow_extra"].get<bool>();
  }
  return CheckPtr(std::move(check));
}

Result<CheckPtr> ParseRegex(const Json& json, const std::string& where) {
  auto check = std::make_shared<Check>();
  check->kind = Check::Kind::kRegex;
  ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"regex", "group", "then"}, where));
  ORCH_ASSIGN_OR_RETURN(check->text, StringOf(json, "regex", where));
  try {
    check->pattern = std::regex(check->text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return CheckError(where + ".regex", ParseShownText(check->text) +
                                            " is not a valid regular "
                                            "expression: " +
                                            e.what());
  }
  if (json.contains("group")) {
    const Json& group = json["group"];
    if (!group.is_number_unsigned() || group.get<std::size_t>() > check->pattern.mark_count()) {
      return CheckError(where + ".group", "expected a group number in [0, " +
                                              std::to_string(check->pattern.mark_count()) +
                                              "], got " + ParseShown(group));
    }
    check->group = group.get<int>();
  }
  if (json.contains("then")) {
    ORCH_ASSIGN_OR_RETURN(CheckPtr then, ParseCheckJson(json["then"], where + ".then"));
    check->children.push_back(std::move(then));
  }
  return CheckPtr(std::move(check));
}

Result<CheckPtr> ParseLabel(const Json& json, const std::string& where) {
  auto check = std::make_shared<Check>();
  check->kind = Check::Kind::kLabel;
  ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"label", "labels", "ordinal"}, where));
  ORCH_ASSIGN_OR_RETURN(check->text, StringOf(json, "label", where));
  if (!json.contains("labels") || !json["labels"].is_array() || json["labels"].size() < 2) {
    return CheckError(where + ".labels", "required: an array of at least two labels");
  }
  for (const Json& label : json["labels"]) {
    if (!label.is_string() || label.get<std::string>().empty()) {
      return CheckError(where + ".labels", "expected non-empty strings, got " + ParseShown(label));
    }
    check->labels.push_back(label.get<std::string>());
  }
  auto same = [&](const std::string& l) { return NormalizeText(l) == NormalizeText(check->text); };
  if (std::none_of(check->labels.begin(), check->labels.end(), same)) {
    return CheckError(where + ".label", ParseShownText(check->text) + " is not one of labels");
  }
  if (json.contains("ordinal")) {
    if (!json["ordinal"].is_boolean()) return CheckError(where + ".ordinal", "expected a boolean");
    check->ordinal = json["ordinal"].get<bool>();
  }
  return CheckPtr(std::move(check));
}

Result<CheckPtr> ParseNumber(const Json& json, const std::string& where) {
  auto check = std::make_shared<Check>();
  check->kind = Check::Kind::kNumber;
  ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"number", "tolerance"}, where));
  if (!json["number"].is_number()) {
    return CheckError(where + ".number", "expected a number, got " + ParseShown(json["number"]));
  }
  check->number = json["number"].get<double>();
  check->number_text = json["number"].dump();
  if (json.contains("tolerance")) {
    const Json& tolerance = json["tolerance"];
    if (!tolerance.is_number() || tolerance.get<double>() < 0) {
      return CheckError(where + ".tolerance",
                        "expected a number >= 0, got " + ParseShown(tolerance));
    }
    check->tolerance = tolerance.get<double>();
    check->tolerance_text = tolerance.dump();
  }
  return CheckPtr(std::move(check));
}

// Kinds whose whole option is one string.
Result<CheckPtr> ParseTextCheck(const Json& json, const char* key, Check::Kind kind,
                                const std::string& where) {
  auto check = std::make_shared<Check>();
  check->kind = kind;
  ORCH_RETURN_IF_ERROR(OnlyKeys(json, {key}, where));
  ORCH_ASSIGN_OR_RETURN(check->text, StringOf(json, key, where));
  return CheckPtr(std::move(check));
}

Result<CheckPtr> ParseCheckJson(const Json& json, const std::string& where) {
  if (!json.is_object() || json.empty()) {
    return CheckError(
        where, "expected a check object such as {\"exact\": \"...\"}, got " + ParseShown(json));
  }
  using Kind = Check::Kind;
  if (json.contains("exact")) return ParseTextCheck(json, "exact", Kind::kExact, where);
  if (json.contains("normalized")) {
    return ParseTextCheck(json, "normalized", Kind::kNormalized, where);
  }
  if (json.contains("contains")) return ParseTextCheck(json, "contains", Kind::kContains, where);
  if (json.contains("regex")) return ParseRegex(json, where);
  if (json.contains("label")) return ParseLabel(json, where);
  if (json.contains("number")) return ParseNumber(json, where);
  if (json.contains("json")) {
    ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"json"}, where));
    if (json["json"] != true) return CheckError(where + ".json", "expected true");
    auto check = std::make_shared<Check>();
    check->kind = Kind::kJson;
    return CheckPtr(std::move(check));
  }
  if (json.contains("json_schema")) {
    ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"json_schema"}, where));
    if (!json["json_schema"].is_object()) {
      return CheckError(where + ".json_schema", "expected a schema object");
    }
    auto check = std::make_shared<Check>();
    check->kind = Kind::kJsonSchema;
    check->schema = json["json_schema"];
    return CheckPtr(std::move(check));
  }
  if (json.contains("tool_call")) {
    ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"tool_call"}, where));
    return ParseToolCall(json["tool_call"], where + ".tool_call");
  }
  for (auto [key, kind] : {std::pair{"all", Kind::kAll}, std::pair{"any", Kind::kAny}}) {
    if (!json.contains(key)) continue;
    ORCH_RETURN_IF_ERROR(OnlyKeys(json, {key}, where));
    auto check = std::make_shared<Check>();
    check->kind = kind;
    ORCH_ASSIGN_OR_RETURN(check->children, ParseCheckList(json[key], where + "." + key));
    return CheckPtr(std::move(check));
  }
  if (json.contains("not")) {
    ORCH_RETURN_IF_ERROR(OnlyKeys(json, {"not"}, where));
    auto check = std::make_shared<Check>();
    check->kind = Kind::kNot;
    ORCH_ASSIGN_OR_RETURN(CheckPtr child, ParseCheckJson(json["not"], where + ".not"));
    check->children.push_back(std::move(child));
    return CheckPtr(std::move(check));
  }
  return CheckError(where, "unknown check " + ParseShown(json) +
                               "; a check is one of exact, normalized, contains, regex, label, "
                               "number, json, json_schema, tool_call, all, any, not "
                               "(docs/tasks.md)");
}

}  // namespace

Result<CheckPtr> ParseCheck(std::string_view json, const std::string& where) {
  Json parsed = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return CheckError(where, "not valid JSON");
  return ParseCheckJson(parsed, where);
}

std::string TrimSpace(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string NormalizeText(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : TrimSpace(text)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  while (!out.empty() && std::string_view(".,;:!?").find(out.back()) != std::string_view::npos) {
    out.pop_back();
  }
  return out;
}

}  // namespace orch::task
