// `orch plan SPEC [--json] [--output FILE]`: validate and expand a spec offline.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterPlanCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
