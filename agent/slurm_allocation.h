// An agent started inside a Slurm job (a pilot, docs/slurm.md) takes what the allocation
// gives it: its GPUs (CUDA_VISIBLE_DEVICES, else SLURM_GPUS_ON_NODE as a count), its own
// spool folder (several pilots may share a node and a config), and the job's identity as
// host facts its Hello carries (slurm.job_id, slurm.partition, slurm.node, slurm.gpus),
// so that `orch slurm status` can pair agents with their jobs. Pure: the environment is
// an input.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/config.h"
#include "protocol/messages.h"

namespace orch::agent {

using Environment = std::map<std::string, std::string>;

// The variables of `environ` that this file reads.
Environment SlurmEnvironment();

// Nothing when `env` has no SLURM_JOB_ID (not inside a Slurm job). Otherwise adjusts
// `config` (gpus, spool_dir) and returns the host facts to add.
std::vector<protocol::KeyValue> ApplySlurmAllocation(const Environment& env, AgentConfig& config);

}  // namespace orch::agent
