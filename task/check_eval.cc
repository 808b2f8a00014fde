// Evaluation of the check grammar (task/checks.h): pure functions of a parsed check and
// a generated text.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <regex>

#include "task/check_tree.h"
#include "task/checks.h"

namespace orch::task {
namespace {

using Json = nlohmann::json;

// libstdc++'s std::regex recurses per character (about 600 bytes of stack each): the
// searches below read at most the first kMaxRegexInput bytes of an output, so that a long
// generation cannot overflow a thread's stack.
constexpr std::size_t kMaxRegexInput = 1024;

std::string RegexInput(std::string_view output) {
  return std::string(output.substr(0, std::min(output.size(), kMaxRegexInput)));
}

Verdict EvalFail(std::string reason) { return Verdict{false, std::move(reason), std::nullopt}; }
Verdict EvalPass() { return Verdict{true, "", std::nullopt}; }

std::string EvalQuoted(std::string_view text) {
  std::string out = Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
  return out.size() > 80 ? out.substr(0, 76) + "...\"" : out;
}

std::string EvalShown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// The output as JSON: trimmed, a ```json ... ``` fence removed; discarded when it is not.
Json OutputJson(std::string_view output) {
  std::string text = TrimSpace(output);
  if (text.starts_with("```")) {
    std::size_t first_line = text.find('\n');
    std::size_t fence = text.rfind("```");
    if (first_line != std::string::npos && fence != std::string::npos && fence > first_line) {
      text = TrimSpace(std::string_view(text).substr(first_line + 1, fence - first_line - 1));
    }
  }
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string TypeName(const Json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return value.type_name();
}

std::string SchemaError(const Json& schema, const Json& value, const std::string& path);

// The schema's type, enum and const keywords.
std::string KindError(const Json& schema, const Json& value, const std::string& path) {
  if (schema.contains("type") && schema["type"].is_string()) {
    std::string type = schema["type"];
    bool ok =
        (type == "object" && value.is_object()) || (type == "array" && value.is_array()) ||
        (type == "string" && value.is_string()) ||
        (type == "integer" &&
         (value.is_number_integer() ||
          (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>()))) ||
        (type == "number" && value.is_number()) || (type == "boolean" && value.is_boolean()) ||
        (type == "null" && value.is_null());
    if (!ok)
      return path + ": expected " + type + ", got " + TypeName(value) + " " + EvalShown(value);
  }
  if (schema.contains("enum") && schema["enum"].is_array() &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    return path + ": " + EvalShown(value) + " is not one of " + EvalShown(schema["enum"]);
  }
  if (schema.contains("const") && schema["const"] != value) {
    return path + ": expected " + EvalShown(schema["const"]) + ", got " + EvalShown(value);
  }
  return "";
}

// A number's minimum and maximum; a string's minLength, maxLength and pattern.
std::string ScalarError(const Json& schema, const Json& value, const std::string& path) {
  if (value.is_number()) {
    double x = value.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) {
      return path + ": " + EvalShown(value) + " is below the minimum " +
             EvalShown(schema["minimum"]);
    }
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) {
      return path + ": " + EvalShown(value) + " is above the maximum " +
             EvalShown(schema["maximum"]);
    }
  }
  if (!value.is_string()) return "";
  std::string s = value.get<std::string>();
  if (schema.contains("minLength") && s.size() < schema["minLength"].get<std::size_t>()) {
    return path + ": " + EvalShown(value) + " is shorter than " + EvalShown(schema["minLength"]);
  }
  if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<std::size_t>()) {
    return path + ": " + EvalShown(value) + " is longer than " + EvalShown(schema["maxLength"]);
  }
  if (schema.contains("pattern") && schema["pattern"].is_string()) {
    try {
      if (!std::regex_search(RegexInput(s), std::regex(schema["pattern"].get<std::string>()))) {
        return path + ": " + EvalShown(value) + " does not match " + EvalShown(schema["pattern"]);
      }
    } catch (const std::regex_error&) {
      return path + ": the schema's pattern " + EvalShown(schema["pattern"]) + " is not valid";
    }
  }
  return "";
}

// An object's required, properties and additionalProperties; an array's items.
std::string ContainerError(const Json& schema, const Json& value, const std::string& path) {
  if (value.is_object()) {
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const Json& name : schema["required"]) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          return path + ": required property " + EvalShown(name) + " is missing";
        }
      }
    }
    const Json* properties = schema.contains("properties") && schema["properties"].is_object()
                                 ? &schema["properties"]
                                 : nullptr;
    for (const auto& [key, item] : value.items()) {
      if (properties != nullptr && properties->contains(key)) {
        std::string inner = SchemaError((*properties)[key], item, path + "." + key);
        if (!inner.empty()) return inner;
      } else if (schema.contains("additionalProperties") &&
                 schema["additionalProperties"] == false) {
        return path + ": unexpected property " + EvalQuoted(key);
      }
    }
  }
  if (value.is_array() && schema.contains("items") && schema["items"].is_object()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      std::string inner =
          SchemaError(schema["items"], value[i], path + "[" + std::to_string(i) + "]");
      if (!inner.empty()) return inner;
    }
  }
  return "";
}

// "" when `value` is valid against the schema subset; else why, naming the path.
std::string SchemaError(const Json& schema, const Json& value, const std::string& path) {
  std::string why = KindError(schema, value, path);
  if (why.empty()) why = ScalarError(schema, value, path);
  if (why.empty()) why = ContainerError(schema, value, path);
  return why;
}

// Equal as BFCL compares an argument: same JSON type, except that an integer is accepted
// where a float is; strings byte for byte.
bool SameArgument(const Json& got, const Json& accepted) {
  if (accepted.is_number_float() && got.is_number()) {
    return got.get<double>() == accepted.get<double>();
  }
  if (accepted.is_number_integer() && got.is_number_integer()) {
    return got.get<std::int64_t>() == accepted.get<std::int64_t>();
  }
  return got.type() == accepted.type() && got == accepted;
}

Verdict EvaluateToolCall(const Check& check, std::string_view output) {
  Json call = OutputJson(output);
  if (call.is_discarded() || !call.is_object()) {
    return EvalFail("expected one JSON tool call, got " + EvalQuoted(TrimSpace(output)));
  }
  if (call.contains("function") && call["function"].is_object()) call = call["function"];
  if (!call.contains("name") || !call["name"].is_string()) {
    return EvalFail("the call names no function (no \"name\")");
  }
  if (call["name"] != check.function) {
    return EvalFail("called " + EvalShown(call["name"]) + ", expected " +
                    EvalQuoted(check.function));
  }
  Json args = call.contains("arguments") ? call["arguments"] : Json::object();
  if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, false);
  if (!args.is_object()) return EvalFail("the call's arguments are not a JSON object");
  for (const auto& [name, accepted] : check.arguments) {
    if (!args.contains(name)) {
      if (check.optional.contains(name)) continue;
      return EvalFail("missing argument " + EvalQuoted(name));
    }
    const Json& got = args[name];
    bool any = std::any_of(accepted.begin(), accepted.end(),
                           [&](const Json& a) { return SameArgument(got, a); });
    if (!any) {
      return EvalFail(
          "argument " + name + ": expected " +
          (accepted.size() == 1 ? EvalShown(accepted[0]) : "one of " + EvalShown(Json(accepted))) +
          ", got " + EvalShown(got));
    }
  }
  if (!check.allow_extra) {
    for (const auto& [name, value] : args.items()) {
      if (!check.arguments.contains(name))
        return EvalFail("unexpected argument " + EvalQuoted(name));
    }
  }
  return EvalPass();
}

Verdict EvaluateLabel(const Check& check, std::string_view output) {
  std::string said = NormalizeText(output);
  auto index_of = [&](const std::string& label) {
    for (std::size_t i = 0; i < check.labels.size(); ++i) {
      if (NormalizeText(check.labels[i]) == label) return static_cast<int>(i);
    }
    return -1;
  };
  int got = index_of(said);
  int want = index_of(NormalizeText(check.text));
  if (got < 0) return EvalFail(EvalQuoted(TrimSpace(output)) + " is not one of the labels");
  Verdict verdict = got == want ? EvalPass()
                                : EvalFail("answered " + EvalQuoted(check.labels[got]) +
                                           ", expected " + EvalQuoted(check.text));
  if (check.ordinal) verdict.distance = std::abs(got - want);
  return verdict;
}

Verdict EvaluateNumber(const Check& check, std::string_view output) {
  static const std::regex kNumber(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)");
  std::string text = RegexInput(output);
  std::smatch match;
  if (!std::regex_search(text, match, kNumber)) {
    return EvalFail("no number in " + EvalQuoted(TrimSpace(output)));
  }
  double got = std::strtod(match.str(0).c_str(), nullptr);
  if (std::fabs(got - check.number) <= check.tolerance) return EvalPass();
  return EvalFail("expected " + check.number_text +
                  (check.tolerance > 0 ? " (within " + check.tolerance_text + ")" : "") + ", got " +
                  match.str(0));
}

Verdict EvaluateRegex(const Check& check, std::string_view output) {
  std::string text = RegexInput(output);
  std::smatch match;
  if (!std::regex_search(text, match, check.pattern)) {
    return EvalFail("no match for /" + check.text + "/ in " + EvalQuoted(TrimSpace(output)));
  }
  if (check.children.empty()) return EvalPass();
  Verdict inner = EvaluateCheck(*check.children[0], match.str(check.group));
  if (!inner.pass) inner.reason = "in " + EvalQuoted(match.str(check.group)) + ": " + inner.reason;
  return inner;
}

}  // namespace

Verdict EvaluateCheck(const Check& check, std::string_view output) {
  using Kind = Check::Kind;
  switch (check.kind) {
    case Kind::kExact:
      return TrimSpace(output) == check.text ? EvalPass()
                                             : EvalFail("expected " + EvalQuoted(check.text) +
                                                        ", got " + EvalQuoted(TrimSpace(output)));
    case Kind::kNormalized:
      return NormalizeText(output) == NormalizeText(check.text)
                 ? EvalPass()
                 : EvalFail("expected " + EvalQuoted(check.text) + " (normalized), got " +
                            EvalQuoted(TrimSpace(output)));
    case Kind::kContains:
      return output.find(check.text) != std::string_view::npos
                 ? EvalPass()
                 : EvalFail(EvalQuoted(check.text) + " not in " + EvalQuoted(TrimSpace(output)));
    case Kind::kRegex:
      return EvaluateRegex(check, output);
    case Kind::kLabel:
      return EvaluateLabel(check, output);
    case Kind::kNumber:
      return EvaluateNumber(check, output);
    case Kind::kJson:
      return OutputJson(output).is_discarded()
                 ? EvalFail("not valid JSON: " + EvalQuoted(TrimSpace(output)))
                 : EvalPass();
    case Kind::kJsonSchema: {
      Json value = OutputJson(output);
      if (value.is_discarded()) return EvalFail("not valid JSON: " + EvalQuoted(TrimSpace(output)));
      std::string why = SchemaError(check.schema, value, "$");
      return why.empty() ? EvalPass() : EvalFail(why);
    }
    case Kind::kToolCall:
      return EvaluateToolCall(check, output);
    case Kind::kAll:
      for (const CheckPtr& child : check.children) {
        Verdict v = EvaluateCheck(*child, output);
        if (!v.pass) return v;
      }
      return EvalPass();
    case Kind::kAny: {
      std::string reasons;
      for (const CheckPtr& child : check.children) {
        Verdict v = EvaluateCheck(*child, output);
        if (v.pass) return v;
        reasons += (reasons.empty() ? "" : "; ") + v.reason;
      }
      return EvalFail("none of: " + reasons);
    }
    case Kind::kNot:
      return EvaluateCheck(*check.children[0], output).pass
                 ? EvalFail("passed a check it must not: " + EvalQuoted(TrimSpace(output)))
                 : EvalPass();
  }
  return EvalFail("unknown check");
}

}  // namespace orch::task
