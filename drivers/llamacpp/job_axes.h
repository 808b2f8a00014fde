// The axes the llama.cpp driver reads from a job's coordinate, the values it
// accepts for each, and the combinations it refuses: one table, as data.
//
// This table is the single source of truth for three things that must agree:
//   - ParseJob (job_settings.h) checks every coordinate value against it and
//     refuses a violated combination rule as invalid_combination;
//   - `orch-driver-llamacpp-REL capabilities --json` prints it (capabilities.h);
//   - the planner embeds that output (planner/declarations/llama.cpp.json) and
//     checks every cell against it at `orch plan` time.
// The format is documented in docs/drivers.md ("Capability declaration").
//
// Pure: no llama.cpp header, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace orch::drivers::llamacpp {

enum class AxisKind { kString, kInteger, kNumber, kBoolean };

struct JobAxis {
  std::string_view name = {};
  AxisKind kind = AxisKind::kString;
  std::string_view noun = {};  // what a value is, for messages: "cache type"
  // kString: the accepted values (lower case), compared after lower-casing;
  // empty = any string.
  std::vector<std::string_view> values = {};
  // Spellings also accepted, with the value each means ("true" -> "on").
  std::vector<std::pair<std::string_view, std::string_view>> aliases = {};
  std::string_view chars = {};  // open kString: the characters allowed; empty = any
  bool pair = false;            // "T" or "K/V", each half one of `values`
  bool list = false;            // comma list, each item one of `values`
  std::int64_t min = 0;         // kInteger: inclusive bounds
  std::int64_t max = 0;
  std::string_view sets = {};  // the engine setting the axis controls
};

// A test on one axis's value. Holds when every test given holds.
struct Condition {
  std::string_view axis = {};
  std::string_view part = {};             // "" whole value; "k" / "v": half of K/V
  std::vector<std::string_view> in = {};  // the value is one of these
  std::string_view prefix = {};           // the value starts with this
  std::optional<std::int64_t> min = {};   // the value is an integer >= min
};

// A coordinate where `when` holds and `needs` does not cannot run.
struct CombinationRule {
  Condition when;
  Condition needs;
  std::string_view reason;  // why, in the engine's terms
};

// Every axis the driver reads, in documentation order. Axes not listed are
// not llama.cpp settings (free knob.* axes are passed through unread).
const std::vector<JobAxis>& JobAxes();
const JobAxis* FindJobAxis(std::string_view name);
const std::vector<CombinationRule>& CombinationRules();

// One coordinate value read against its axis: `text` is canonical (lower
// case, aliases resolved, switches "on"/"off"); `integer` / `number` hold the
// parsed value of numeric axes. kInvalidArgument names the field, the value
// and what is accepted.
struct AxisReading {
  std::string text;
  std::int64_t integer = 0;
  double number = 0;
};
Result<AxisReading> ReadAxisValue(const JobAxis& axis, std::string_view text);

// Whether `value` (the axis's canonical text, e.g. "q8_0/f16", "2") passes.
bool Holds(const Condition& condition, std::string_view value);

// "attention = \"on\"", "hardware = \"gpu...\"", "tp >= 2": the condition as
// a spec writer reads it.
std::string DescribeCondition(const Condition& condition);

}  // namespace orch::drivers::llamacpp
