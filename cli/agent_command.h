// `orch agent --config FILE`: the agent daemon (docs/agent.md). Registers with
// the coordinator, runs assigned jobs through its drivers and streams the
// digests back. SIGTERM/SIGINT: stop taking work, cancel running drivers, flush
// the spool to the coordinator (bounded wait), exit 0.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterAgentCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
