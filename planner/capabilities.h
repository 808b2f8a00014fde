// Engine capabilities at plan time: which axes an engine has, which values it
// accepts, and which combinations it cannot run, read from the engine driver's
// own declaration (capability_declaration.h) so that `orch plan` refuses
// exactly the cells the driver would refuse, before any machine is asked.
//
// Engines without a declaration are allowed (with a warning).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/axes.h"
#include "planner/axis_value.h"
#include "planner/capability_declaration.h"

namespace orch::planner {

// Axis name -> normalised value; the full coordinate of one cell.
using Coordinate = std::map<std::string, AxisValue>;

enum class ProblemKind { kUnknownAxis, kValue, kCombination };

// One reason a coordinate cannot run on an engine.
struct CapabilityProblem {
  std::vector<std::string> axes;  // the axes involved, e.g. {"kv", "attention"}
  std::string message;            // what is wrong and how to fix it
  ProblemKind kind = ProblemKind::kValue;
};

// "llama.cpp@b8390" -> "llama.cpp".
std::string_view EngineFamily(std::string_view engine);

// The embedded declaration of an engine family, or nullptr when there is none.
const EngineCapabilities* FindEngineCapabilities(std::string_view family);

// What the planner accepts for `axis` on `engine`: the declaration's values
// (`declared`), with numeric bounds that are the registry's (axes.h) narrowed
// by the declaration's. nullopt when the engine does not declare the axis.
struct AcceptedValues {
  const AxisDef* def = nullptr;            // the planner's registry entry
  const DeclaredAxis* declared = nullptr;  // the engine's declaration
  double min = 0, max = 0;                 // numeric axes: inclusive bounds
};
std::optional<AcceptedValues> AcceptedFor(const EngineCapabilities& engine, std::string_view axis);

// Every problem of `coordinate` on `engine`: undeclared axes (knob.* pass),
// values outside what is accepted (both halves of a K/V pair, each item of a
// list), violated combination rules (a rule whose axes the coordinate lacks
// does not apply).
std::vector<CapabilityProblem> CheckCoordinate(const EngineCapabilities& engine,
                                               const Coordinate& coordinate);

}  // namespace orch::planner
