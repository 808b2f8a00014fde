// `orch model synth RECIPE -o FILE [--json]`: writes the generated GGUF of a recipe.
// `orch model hash FILE [--json] [--cache FILE]`: a file's SHA-256, cached by identity.
// `orch model quantize IN OUT TYPE [--engine RELEASE | --driver EXE] [--json]`: quantizes a
// GGUF through a llama.cpp driver (`EXE quantize IN OUT TYPE`). See docs/cli.md.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/driver_lookup.h"  // DefaultDriverCandidates: where --engine looks

namespace orch::cli {

void RegisterModelCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
