// `orch bisect SPEC`: a spec with [bisect] run round by round on this machine like
// `orch run`, until a set of the axes from and to differ in explains their divergence,
// they agree, or its rounds are spent (docs/bisect.md).
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterBisectCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
