// Parses and validates an experiment spec (TOML, docs/spec.md) into a Spec.
//
// Every problem is collected, not just the first: the caller gets all of them at once,
// each with line, column, field, value and what was expected. A TOML syntax error stops
// parsing (the document has no reliable structure past it) and is the only error then.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "planner/diagnostics.h"
#include "planner/source_reader.h"
#include "planner/spec.h"

namespace orch::planner {

// The spec and every problem found. `spec` is unset only after a TOML syntax error; it is
// complete and valid exactly when `diagnostics` has no error (otherwise it holds what
// parsed, so that later checks can still report their problems in the same run).
struct ParsedSpec {
  std::optional<Spec> spec;
  Diagnostics diagnostics;
};

// `file` names the spec in messages; `reader` must outlive the call.
ParsedSpec ParseSpec(std::string_view toml_text, const std::string& file, SourceReader& reader);

}  // namespace orch::planner
