// The axis registry: which axes a spec may name, their value types, and how raw values
// from the spec are normalised into canonical coordinate values.
//
// Axes are the six standard ones (engine, quant, kv, attention, tp, hardware), the known
// extras below, and free engine knobs spelled `knob.<name>` that are passed to the driver
// unchecked. Anything else is an unknown axis (most often a typo).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "planner/axis_value.h"

namespace orch::planner {

enum class AxisType { kString, kInt, kFloat, kBool, kAny };

// Which workloads an axis can change. Sampler settings act only on generation; a
// teacher-forced job neither varies with them nor includes them in its coordinate.
enum class AxisScope { kAllWorkloads, kGenerateOnly };

struct AxisDef {
  std::string_view name;
  AxisType type = AxisType::kString;
  AxisScope scope = AxisScope::kAllWorkloads;
  bool standard = false;   // one of the six required baseline axes
  bool lowercase = false;  // string values are case-insensitive names
  double min = 0;          // numeric lower bound (inclusive)
  double max = 1e18;       // numeric upper bound (inclusive)
  std::string_view help;   // one line for messages and docs
};

inline constexpr std::string_view kKnobPrefix = "knob.";

// The definition of `name`, or nullptr for an unknown axis. Every `knob.*` name resolves
// to one shared definition of type kAny.
const AxisDef* FindAxis(std::string_view name);

// The six standard axes in documentation order.
const std::vector<std::string_view>& StandardAxes();
// All named axes (standard and known extras) in documentation order.
std::vector<std::string_view> KnownAxisNames();

// The known axis closest to `unknown` (edit distance <= 2), or "" when none is close.
std::string SuggestAxis(std::string_view unknown);

// Turns a value as written in the spec into the canonical value for `axis`: trims and
// lower-cases names, folds "q8_0/q8_0" to "q8_0", maps booleans to "on"/"off" for
// attention, widens integers for float axes, checks types and bounds. The error message
// says what was expected and names the value.
Result<AxisValue> NormaliseAxisValue(const AxisDef& axis, const AxisValue& raw);

}  // namespace orch::planner
