// An engine driver's capability declaration (schema "orch.capabilities/1",
// docs/drivers.md "Capability declaration"): the axes the driver reads, the
// values it accepts for each, and the combinations it refuses, as data.
//
// The planner does not keep its own copy of any engine's rules: it embeds the
// declarations checked in under planner/declarations/ (for llama.cpp, the
// output of `orch-driver-llamacpp-REL capabilities --json`; a test fails when
// the two differ) and checks every cell against them (capabilities.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "planner/axis_value.h"

namespace orch::planner {

enum class DeclaredType { kString, kInteger, kNumber, kBoolean };

struct DeclaredAxis {
  std::string name;
  DeclaredType type = DeclaredType::kString;
  std::vector<std::string> values;  // strings: accepted values; empty = any
  std::string chars;                // open strings: allowed characters; empty = any
  bool pair = false;                // "T" or "K/V", each half one of `values`
  bool list = false;                // comma list, each item one of `values`
  std::optional<double> min, max;   // numbers: inclusive bounds
  std::string sets;                 // the engine setting it controls
};

// A test on one axis's value; holds when every test given holds.
struct ValueCondition {
  std::string axis;
  std::string part;                 // "" whole value; "k" / "v": half of "K/V"
  std::vector<std::string> in;      // the value is one of these
  std::string prefix;               // the value starts with this
  std::optional<std::int64_t> min;  // the value is an integer >= min
};

// A coordinate where `when` holds and `needs` does not cannot run.
struct CombinationRule {
  ValueCondition when;
  ValueCondition needs;
  std::string reason;
};

struct EngineCapabilities {
  std::string family;  // "llama.cpp": the engine label before '@'
  std::string driver;  // who declares it, e.g. "orch-driver-llamacpp"
  std::vector<DeclaredAxis> axes;
  std::vector<CombinationRule> rules;

  const DeclaredAxis* FindAxis(std::string_view name) const;
};

// Reads one declaration. kInvalidArgument names the JSON field that is wrong.
Result<EngineCapabilities> ParseCapabilityDeclaration(std::string_view json_text);

// The declarations built into the planner (planner/declarations/*.json).
const std::vector<std::string_view>& EmbeddedDeclarations();

// Whether `value` passes `condition` (a "K/V" value without '/' is both halves).
bool Holds(const ValueCondition& condition, const AxisValue& value);

// `attention = "on"`, `hardware = "gpu..."`, `tp >= 2`: as a spec writer reads it.
std::string DescribeCondition(const ValueCondition& condition);

}  // namespace orch::planner
