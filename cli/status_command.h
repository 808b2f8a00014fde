// `orch status [EXPERIMENT] [--jobs] [--watch] [--json]`: progress of every
// experiment (succeeded/running/pending/failed/cancelled of total, with a bar
// and an ETA), the running jobs (cell, agent, host, elapsed), the jobs no
// connected agent can run with the reason, the agents (with positions/s) and
// recent failures; --jobs prints one line per job instead (short id, cell,
// workload, repeat, state, agent and host, attempts, elapsed, reason).
// --watch ends when every experiment is done (exit 0), when the run in --data-dir
// has ended (its final counts from the store, exit 0) or when the coordinator stops
// answering (exit 1). `orch experiments` lists the experiments with their counts,
// from the store in --data-dir when no run answers there. Colour and screen
// refresh only when stdout is a terminal. --json prints the orch.status/1
// document (docs/coordinator.md) once per refresh. Client options as in
// cli/client_commands.h. Renderings: cli/status_text.h.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterStatusCommand(CLI::App& app, int& exit_code);
void RegisterExperimentsCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
