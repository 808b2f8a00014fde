// `orch export` and `orch import` (docs/bundles.md): plan bundles out to contributors'
// home rigs, their signed result bundles back in. Both talk to a running coordinator
// (which holds the key that signs and checks); `orch import --data-dir` imports into the
// store of a stopped one. `orch run --bundle` (cli/run_command.h) is the rig's side.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterExportCommand(CLI::App& app, int& exit_code);
void RegisterImportCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
