// Diagnostics: every problem found in a spec, collected so that the user sees all of them
// at once, each with file:line:column, the field, the value and what was expected.
#pragma once

#include <string>
#include <vector>

#include "planner/axis_value.h"

namespace orch::planner {

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourcePos pos;
  std::string field;    // dotted path, e.g. "alternatives.kv[1]" or "workloads[0].positions"
  std::string message;  // names the value and what was expected

  // "FILE:LINE:COL: error: FIELD: MESSAGE" (position omitted when unknown).
  std::string Format(const std::string& file) const;
};

class Diagnostics {
 public:
  void Error(SourcePos pos, std::string field, std::string message);
  void Warning(SourcePos pos, std::string field, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  int error_count() const { return error_count_; }
  const std::vector<Diagnostic>& all() const { return all_; }
  std::vector<Diagnostic> errors() const;
  std::vector<Diagnostic> warnings() const;

 private:
  std::vector<Diagnostic> all_;
  int error_count_ = 0;
};

// Quotes a value for messages: strings in double quotes, other values bare.
std::string Quote(const AxisValue& value);
std::string Quote(const std::string& text);

}  // namespace orch::planner
