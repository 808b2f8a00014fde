// `orch coordinator --config FILE`: the coordinator daemon
// (docs/coordinator.md).
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterCoordinatorCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
