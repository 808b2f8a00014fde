// Engine capability tables: which axes an engine understands, which values it accepts,
// and which combinations it cannot run. `orch plan` checks every cell against the table
// of its engine so that impossible cells are rejected before any machine is asked.
//
// Engines without a table are allowed (with a warning): their drivers declare
// capabilities when they register.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "planner/axis_value.h"

namespace orch::planner {

// Axis name -> normalised value; the full coordinate of one cell.
using Coordinate = std::map<std::string, AxisValue>;

// One reason a coordinate cannot run on an engine.
struct CapabilityProblem {
  std::vector<std::string> axes;  // the axes involved, e.g. {"kv", "attention"}
  std::string message;            // what is wrong and how to fix it
};

struct AxisSupport {
  std::string_view axis;
  std::vector<std::string_view> values;  // accepted values; empty = any value
};

struct EngineCapabilities {
  std::string_view family;             // "llama.cpp", "vllm"
  std::vector<AxisSupport> axes;       // every axis the engine understands (knob.* always)
  // Combination rules beyond single values.
  std::vector<CapabilityProblem> (*check_combination)(const Coordinate&) = nullptr;
};

// "llama.cpp@b8390" -> "llama.cpp".
std::string_view EngineFamily(std::string_view engine);

// The table for an engine family, or nullptr when orch has none.
const EngineCapabilities* FindEngineCapabilities(std::string_view family);

// Every problem of `coordinate` on `engine`: unsupported axes, unsupported values (both
// halves of a K/V pair are checked), invalid combinations.
std::vector<CapabilityProblem> CheckCoordinate(const EngineCapabilities& engine,
                                               const Coordinate& coordinate);

}  // namespace orch::planner
