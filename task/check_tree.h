// The parsed form of a check (task/checks.h), shared by the parser and the evaluator;
// internal to the task library.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "task/checks.h"

namespace orch::task {

struct Check {
  enum class Kind {
    kExact,
    kNormalized,
    kContains,
    kRegex,
    kLabel,
    kNumber,
    kJson,
    kJsonSchema,
    kToolCall,
    kAll,
    kAny,
    kNot
  };
  Kind kind = Kind::kExact;
  std::string text;  // exact, normalized, contains, label; the pattern of a regex
  std::regex pattern;
  int group = 0;
  std::vector<std::string> labels;
  bool ordinal = false;
  double number = 0;
  double tolerance = 0;
  std::string number_text, tolerance_text;  // as the check wrote them
  nlohmann::json schema;                    // json_schema
  std::string function;
  std::map<std::string, std::vector<nlohmann::json>> arguments;  // tool_call: accepted values
  std::set<std::string> optional;
  bool allow_extra = false;
  std::vector<CheckPtr> children;  // all, any, not, regex "then"
};

}  // namespace orch::task
