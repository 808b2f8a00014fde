// `orch keygen NAME [--role ROLE] [--dir DIR] [--force] [--json]`: a new identity key
// (protocol/identity_key.h, docs/security.md) as zcert files DIR/NAME.key (public)
// and DIR/NAME.key_secret (mode 0600); prints the public key and where the files are.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterKeygenCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
