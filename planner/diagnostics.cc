#include "planner/diagnostics.h"

namespace orch::planner {

std::string Diagnostic::Format(const std::string& file) const {
  std::string out = file;
  if (pos.line > 0) {
    out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  }
  out += severity == Severity::kError ? ": error: " : ": warning: ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

void Diagnostics::Error(SourcePos pos, std::string field, std::string message) {
  all_.push_back({Severity::kError, pos, std::move(field), std::move(message)});
  ++error_count_;
}

void Diagnostics::Warning(SourcePos pos, std::string field, std::string message) {
  all_.push_back({Severity::kWarning, pos, std::move(field), std::move(message)});
}

std::vector<Diagnostic> Diagnostics::errors() const {
  std::vector<Diagnostic> out;
  for (const Diagnostic& d : all_) {
    if (d.severity == Severity::kError) out.push_back(d);
  }
  return out;
}

std::vector<Diagnostic> Diagnostics::warnings() const {
  std::vector<Diagnostic> out;
  for (const Diagnostic& d : all_) {
    if (d.severity == Severity::kWarning) out.push_back(d);
  }
  return out;
}

std::string Quote(const AxisValue& value) {
  return value.is_string() ? Quote(value.as_string()) : value.ToText();
}

std::string Quote(const std::string& text) { return "\"" + text + "\""; }

}  // namespace orch::planner
