// Options the command line names that no command of it has: "--model-dirr" after
// `orch run`. CLI11 gives such a word to a positional that is still empty (SPEC), so
// the user would read "SPEC excludes --bundle" instead of the typo.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace orch::cli {

// "orch run: unknown option --model-dirr (did you mean --model-dir?)" for the first
// "--NAME" or "--NAME=VALUE" in `args` (argv without the program) that neither the
// subcommand it follows nor a command above it declares; "" when there is none. Stops
// at a bare "--". Subcommands are followed by name as CLI11 does.
std::string UnknownOptionError(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace orch::cli
