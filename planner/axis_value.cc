#include "planner/axis_value.h"

#include <charconv>
#include <cstdio>

namespace orch::planner {

std::string FormatDouble(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

void AppendJsonString(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string AxisValue::ToText() const {
  if (is_string()) return as_string();
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return FormatDouble(as_float());
  return as_bool() ? "true" : "false";
}

std::string AxisValue::ToCanonicalJson() const {
  if (!is_string()) return ToText();
  std::string out;
  AppendJsonString(out, as_string());
  return out;
}

}  // namespace orch::planner
