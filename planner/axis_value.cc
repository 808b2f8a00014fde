#include "planner/axis_value.h"

#include <charconv>

#include "planner/canonical_json.h"

namespace orch::planner {

std::string FormatDouble(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

std::string AxisValue::ToText() const {
  if (is_string()) return as_string();
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return FormatDouble(as_float());
  return as_bool() ? "true" : "false";
}

std::string AxisValue::ToCanonicalJson() const { return CanonicalJsonText(AxisValueJson(*this)); }

}  // namespace orch::planner
