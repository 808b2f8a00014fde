// Server presets: the standard mapping of orch's axes to a server's launch flags, so a
// [[servers]] entry need not spell out every value (docs/agent.md, "Servers").
//
// `preset = "llama-server"` maps the axes llama-server's driver declares as launch
// settings (planner/declarations/llama-server.json): attention -> -fa, kv -> -ctk/-ctv
// (one type or K/V), hardware cpu/gpu -> -ngl 0/999, tp 1, threads -> -t/-tb,
// batch -> -b, ubatch -> -ub, ctx -> -c, slots -> -np, repack off -> --no-repack (0 for
// a numeric axis means the server's default: nothing is added). An axis the entry maps
// itself keeps the entry's mapping.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/config.h"
#include "base/status.h"

namespace orch::agent {

// The known preset names.
const std::vector<std::string>& ServerPresetNames();

// The axes of preset `name`; InvalidArgument naming the known presets (with a
// did-you-mean) for another name.
Result<std::map<std::string, std::map<std::string, ServerAxisValue>>> ServerPresetAxes(
    const std::string& name);

// Adds to `server.axes` every axis of `server.preset` the entry does not map.
Status ApplyServerPreset(ServerConfig& server);

}  // namespace orch::agent
