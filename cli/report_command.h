// `orch report EXPERIMENT [--data-dir DIR] [--json|--csv] [--html FILE]`: where and why the
// configurations of an experiment diverge, read from the coordinator's store.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterReportCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
