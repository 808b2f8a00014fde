// `orch store check DATA_DIR [--json]`: verifies every checksum and record of a data
// directory's store and reports damage by experiment (exit 1 on damage).
// `orch store backup DATA_DIR DEST`: adds a verified backup of the store to DEST, also
// while the coordinator runs. `orch store restore BACKUP DATA_DIR`: restores the latest
// backup into a data directory without a store. See docs/cli.md and docs/store.md.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterStoreCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
