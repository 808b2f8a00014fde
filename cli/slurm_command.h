// `orch slurm submit` and `orch slurm status` (docs/slurm.md): agents as pilot jobs on an
// existing Slurm cluster. The decisions are in cli/slurm_pilots.h; this runs squeue and
// sbatch and asks the coordinator.
#pragma once

#include <CLI/CLI.hpp>

namespace orch::cli {

void RegisterSlurmCommand(CLI::App& app, int& exit_code);

}  // namespace orch::cli
