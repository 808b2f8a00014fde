// A real one-node Slurm cluster for tests (docs/slurm.md): munged, slurmctld and slurmd
// from Debian's slurm-wlm and munge, run as children of the test in their own folder,
// with a generated slurm.conf on free ports. The node offers 2 CPUs and 2 GPUs; the GPUs
// are faked: gres.conf names two empty files as their devices, which is enough for Slurm
// to count and allocate them (nothing runs on them). Every daemon is stopped by pid, after
// every job in the queue was cancelled.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "tests/support/subprocess.h"

namespace orch::testing {

class SlurmCluster {
 public:
  // `extra_conf`: more slurm.conf lines (e.g. MaxArraySize=20001).
  explicit SlurmCluster(std::filesystem::path dir, std::string extra_conf = "");
  ~SlurmCluster();  // Stop()

  // Starts the daemons and waits (at most 60 s) for the node to be idle; sets
  // SLURM_CONF in this process's environment so that its children use this cluster.
  // An assertion failure names the daemon logs.
  void Start();
  void Stop();

  // `slurm command ARGS...` (squeue, scancel, ...) against this cluster.
  ProcessResult Run(const std::vector<std::string>& argv);
  std::string Logs() const;

 private:
  std::filesystem::path dir_;
  std::string extra_conf_;
  std::unique_ptr<cli::ChildProcess> munged_, slurmctld_, slurmd_;
};

}  // namespace orch::testing
