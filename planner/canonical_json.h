// Canonical JSON text: the bytes that job ids hash (planner/job_id.h, docs/spec.md
// "Job ids").
//
// Callers build the value as an nlohmann::json tree; CanonicalJsonText writes it compactly,
// object keys in byte order (nlohmann's object is a std::map). The bytes are those of
// nlohmann's dump() (no indent, ensure_ascii off) except in two places, where dump() would
// change ids that users have stored (the form predates the use of nlohmann here):
//   - A double is written in the shortest form that reads back to it, as std::to_chars
//     writes it: "1", "1e+05", "1e-04", "-0", "nan", "inf". dump() writes "1.0",
//     "100000.0", "0.0001", "-0.0", "null", "null".
//   - A string is escaped byte by byte, and bytes that are not UTF-8 (a text_file in
//     Latin-1) pass through unchanged. dump() throws type_error 316 on them (or, when
//     asked, replaces or drops them).
// Escapes are dump()'s: \" \\ \b \f \n \r \t, \u00xx (lower-case hex) for the other bytes
// below 0x20, nothing else ('/', DEL and non-ASCII are written as they are).
// tests/planner/canonical_json_golden_test.cc pins the bytes; canonical_json_test.cc checks
// the agreement with dump() and the two departures. Never throws.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/axis_value.h"

namespace orch::planner {

// The canonical text of `value`. Precondition: `value` holds no binary or discarded value.
std::string CanonicalJsonText(const nlohmann::json& value);

// An axis value as a JSON value: a string, an integer, a double or a boolean.
nlohmann::json AxisValueJson(const AxisValue& value);

// Appends `text` as a JSON string literal: quotes, the escapes above, every other byte as
// it is (UTF-8 or not).
void AppendJsonString(std::string& out, const std::string& text);

}  // namespace orch::planner
