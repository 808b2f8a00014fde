// How `orch` subcommands plug into the binary.
//
// Each subcommand lives in its own file and exposes one Register function that adds a
// CLI11 subcommand to the app. Its callback does the work and stores the process exit
// code in `exit_code` (which outlives the app: it is a local of main()).
#pragma once

namespace orch::cli {

// Documented in docs/cli.md. Every command uses these and only these.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;         // I/O failure, unreachable peer, other
inline constexpr int kExitInvalidInput = 2;  // invalid spec/arguments: nothing was done

}  // namespace orch::cli
