// Pilot jobs on a Slurm cluster (docs/slurm.md): which agent pilots to submit, from what
// the coordinator has pending and what Slurm already holds. Pure: status rows in, sbatch
// arguments out; cli/slurm_command.cc runs squeue and sbatch.
//
// A job no connected agent can run needs a pilot of its shape: its hardware class and
// GPU count (protocol::Requirements). Per shape, pilots already queued or running count
// against --max-pilots; no more pilots are submitted than there are such jobs. A shape
// the pilots' agent config cannot serve (another hardware class) gets none, and says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace orch::cli {

struct PilotOptions {
  std::string orch = "orch";   // the orch binary on the compute nodes
  std::string agent_config;    // absolute: the pilots' agent config
  std::string agent_hardware;  // its hardware class (agent.hardware)
  std::string id_prefix;       // pilot ids: PREFIX.slurm-$SLURM_JOB_ID
  std::string partition;       // empty: the cluster's default
  std::string account;         // empty: none
  std::string walltime = "01:00:00";
  int max_pilots = 2;       // per shape, queued or running
  int cpus_per_task = 1;    // for CPU jobs
  int drain_seconds = 120;  // --signal=B:TERM@N: the agent drains before walltime
  std::string log_dir;      // absolute: where each pilot's log goes (JOBID.log)
};

// One pilot job of ours as squeue lists it.
struct PilotJob {
  std::string job_id;
  std::string name;   // the shape's job name (PilotName)
  std::string state;  // PENDING, RUNNING, ...
  std::string node;
};

struct Shape {
  std::string hardware;
  std::int32_t gpus = 0;
  friend auto operator<=>(const Shape&, const Shape&) = default;
};

// The job name of a shape's pilots: "orch-pilot-cpu-g0", "orch-pilot-gpu_h100-g2".
std::string PilotName(const Shape& shape);

// The rows of `squeue -h -o "%i|%j|%T|%N"`; rows of other names are left out.
std::vector<PilotJob> ParseSqueue(const std::string& output);

struct PilotPlan {
  struct Submission {
    Shape shape;
    int count = 0;
    std::vector<std::string> sbatch_args;  // without the script path
  };
  std::vector<Submission> submissions;
  std::vector<std::string> notes;  // one line each: what waits, what cannot be served
};

// `status`: a StatusReply (running and unrunnable pending jobs, as orch status asks).
PilotPlan PlanPilots(const protocol::StatusReply& status, const std::vector<PilotJob>& pilots,
                     const PilotOptions& options);

// The batch script every pilot runs: exec orch agent with the config and its own id.
std::string PilotScript(const PilotOptions& options);

}  // namespace orch::cli
