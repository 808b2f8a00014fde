// `orch run SPEC`: the whole system on one machine. Starts a coordinator and N local
// agents as child processes of this one (RocksDB under --data-dir), submits the plan,
// shows progress, and stops everything it started. Exit 0 when every job succeeded.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterRunCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
