// `orch run --bundle FILE`: a contributor's home rig runs a lab's plan bundle offline
// and signs what finished into a result bundle (docs/bundles.md).
#pragma once

#include "cli/run_local.h"

namespace orch::cli::run_local {

// The exit status as for `orch run SPEC`; the result bundle is written also after a
// failure or a stop signal, with what finished.
int RunBundle(const RunOptions& options);

}  // namespace orch::cli::run_local
