#include "planner/canonical_json.h"

#include <charconv>
#include <cstdint>
#include <cstdio>

#include "base/check.h"

namespace orch::planner {
namespace {

using json = nlohmann::json;

void AppendValue(std::string& out, const json& value);

template <typename Integer>
void AppendInteger(std::string& out, Integer value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, end);
}

void AppendObject(std::string& out, const json& object) {
  out += '{';
  bool first = true;
  // nlohmann's object_t is a std::map<std::string, json>: keys in byte order.
  for (const auto& [key, member] : object.get_ref<const json::object_t&>()) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, key);
    out += ':';
    AppendValue(out, member);
  }
  out += '}';
}

void AppendArray(std::string& out, const json& array) {
  out += '[';
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (i > 0) out += ',';
    AppendValue(out, array[i]);
  }
  out += ']';
}

void AppendValue(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return AppendObject(out, value);
    case json::value_t::array:
      return AppendArray(out, value);
    // Not dump(): it throws on bytes that are not UTF-8 (see the header).
    case json::value_t::string:
      return AppendJsonString(out, value.get_ref<const std::string&>());
    // Not dump(): it writes "1.0" where ids were made from "1" (see the header).
    case json::value_t::number_float:
      out += FormatDouble(value.get<double>());
      return;
    // dump()'s bytes, written here without a serializer per value.
    case json::value_t::number_integer:
      return AppendInteger(out, value.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return AppendInteger(out, value.get<std::uint64_t>());
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::binary:
    case json::value_t::discarded:
      break;
  }
  ORCH_CHECK(false) << "no canonical JSON for a " << value.type_name() << " value";
}

}  // namespace

std::string CanonicalJsonText(const json& value) {
  std::string out;
  AppendValue(out, value);
  return out;
}

json AxisValueJson(const AxisValue& value) {
  return std::visit([](const auto& v) { return json(v); }, value.storage());
}

void AppendJsonString(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
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

}  // namespace orch::planner
