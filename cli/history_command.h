// `orch history [EXPERIMENT]` (one line per run, as Slurm's sacct) and `orch events`
// (the coordinator's event log, `--follow` to keep printing new ones): both read the
// store in --data-dir read-only (cli/stored_status.h), so they work while its
// coordinator runs and after. Documented in docs/cli.md.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterHistoryCommand(CLI::App& app, int& exit_code);
void RegisterEventsCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
