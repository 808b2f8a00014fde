// Checks of a task case's output (docs/tasks.md): a JSON grammar, parsed once into a
// tree, evaluated on a generated text by a pure function that says pass or fail and, when
// it fails, why, in words a reader of the report understands ("expected port 5432, got
// 543"). Nothing here runs an engine or reads a file.
//
// Grammar (one key picks the kind; the others are its options):
//   {"exact": TEXT}                         the output, trimmed of surrounding whitespace
//   {"normalized": TEXT}                    both case-folded (ASCII), whitespace runs as one
//                                           space, trimmed, trailing . , ; : ! ? removed
//   {"contains": TEXT}                      the output holds TEXT
//   {"regex": PATTERN, "group": N, "then": CHECK}
//                                           ECMAScript search; the check "then" applies to
//                                           group N (default 0: the whole match); without
//                                           "then" a match passes. Regex searches (here,
//                                           "number" and a schema's "pattern") read the
//                                           output's first 4096 bytes: libstdc++'s regex
//                                           recurses per character
//   {"label": L, "labels": [L...], "ordinal": BOOL}
//                                           the normalized output is one of the labels and
//                                           is L; ordinal labels give the distance in
//                                           positions between the output's label and L
//   {"number": X, "tolerance": T}           the first number in the output is within T of X
//   {"json": true}                          the output is JSON (a ```json fence is removed)
//   {"json_schema": SCHEMA}                 ... and valid against SCHEMA (subset: type,
//                                           properties, required, additionalProperties, enum,
//                                           const, items, minimum, maximum, minLength,
//                                           maxLength, pattern)
//   {"tool_call": {"name": F, "arguments": {ARG: [ACCEPTED...]}, "optional": [ARG...],
//                  "allow_extra": BOOL}}    BFCL's AST match: the output is one JSON call
//                                           {"name", "arguments"} (or {"function": {...}};
//                                           arguments may be a JSON string); the name is F;
//                                           every ARG not optional is present; no other
//                                           argument unless allow_extra; each value equals
//                                           one accepted value of the same type (an integer
//                                           is accepted for a float)
//   {"all": [CHECK...]}, {"any": [CHECK...]}, {"not": CHECK}
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::task {

struct Check;  // a parsed check (checks.cc)
using CheckPtr = std::shared_ptr<const Check>;

struct Verdict {
  bool pass = false;
  std::string reason;              // empty when it passed
  std::optional<double> distance;  // an ordinal label check's distance
};

// Parses a check from its JSON text. InvalidArgument naming `where` (e.g.
// "cases.jsonl:3: case c7: checks[1]"), the key and the value.
Result<CheckPtr> ParseCheck(std::string_view json, const std::string& where);

// The verdict of `check` on the generated `output`.
Verdict EvaluateCheck(const Check& check, std::string_view output);

// Text helpers the grammar defines, shared with the report.
std::string TrimSpace(std::string_view text);
std::string NormalizeText(std::string_view text);

}  // namespace orch::task
