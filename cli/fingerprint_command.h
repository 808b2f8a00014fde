// `orch fingerprint [--json] [--driver NAME=EXECUTABLE]... [--checkout [NAME=]DIR]...
//  [--backend-dir [NAME=]DIR] [--model FILE]...`: this machine's fingerprint, offline.
// `orch fingerprint diff A B [--json]`: the fields two fingerprint JSON files differ in.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterFingerprintCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
