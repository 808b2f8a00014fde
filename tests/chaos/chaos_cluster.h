// A real orch cluster for chaos scenarios: `orch coordinator` and `orch agent` child
// processes (each in its own process group, logs in the cluster's temp dir) that a test
// kills (SIGKILL), stops (SIGSTOP / SIGCONT) and restarts at moments it chooses. The
// coordinator keeps one fixed endpoint across restarts. An agent may be started through
// a wrapper command (e.g. `ip netns exec NS`, which execs the agent in place, so the pid
// is the agent's). Everything it starts it stops by pid when it is destroyed (stopped
// processes are continued first); its temp dir is removed unless the test failed or ORCH_CHAOS_KEEP=1. The
// data dir may be a small tmpfs, for a full disk.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "tests/chaos/tmpfs_mount.h"
#include "tests/support/subprocess.h"

namespace orch::testing {

struct ChaosClusterOptions {
  std::string host = "127.0.0.1";  // the address the coordinator listens on
  bool insecure = false;           // true for a host that is not loopback
  std::chrono::milliseconds heartbeat{200};
  std::chrono::milliseconds agent_timeout{1500};
  std::chrono::milliseconds lease{3000};
  int retry_budget = 10;
  int agent_slots = 1;
  // > 0: the data dir is a tmpfs of this size (TmpfsMount), unmounted after every process
  // stopped (its contents copied to orch-data.kept first when the test failed).
  std::uint64_t data_dir_tmpfs_bytes = 0;
};

class ChaosCluster {
 public:
  ChaosCluster(const std::string& name, const ChaosClusterOptions& options);
  ~ChaosCluster();
  ChaosCluster(const ChaosCluster&) = delete;
  ChaosCluster& operator=(const ChaosCluster&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path data_dir() const { return dir_ / "orch-data"; }
  const ChaosClusterOptions& options() const { return options_; }
  const std::string& endpoint() const { return endpoint_; }
  // The data dir's tmpfs; null without data_dir_tmpfs_bytes.
  TmpfsMount* data_dir_mount() { return mount_.get(); }

  // Starts `orch coordinator` (again, after a kill) and waits up to 20 s for it to bind.
  void StartCoordinator();
  // SIGKILL to the coordinator, reaped.
  void KillCoordinator();
  cli::ChildProcess& coordinator() { return *coordinator_; }

  // Writes agent-ID.toml (the test driver as engine "test-engine@1", spool-ID) and starts
  // `WRAPPER... orch agent`. Starting an id again replaces (and reaps) the old process.
  void StartAgent(const std::string& id, const std::vector<std::string>& wrapper = {});
  void KillAgent(const std::string& id);  // SIGKILL, reaped
  // Signals the agent's pid only (not its process group).
  void SignalAgent(const std::string& id, int signal);
  pid_t AgentPid(const std::string& id) const;
  std::vector<std::string> AgentIds() const;
  // The agent's direct children (its drivers), from /proc.
  std::vector<pid_t> DriverPids(const std::string& id) const;

  // `orch submit` of a TestEngineSpec; a failed submit is a test failure.
  void Submit(const std::string& experiment, int jobs, int positions, int delay_ms);
  // `orch submit` of a spec given as TOML text.
  void SubmitSpec(const std::string& experiment, const std::string& spec);
  // `orch status --json --jobs --timeout 2`, parsed; nullopt when it failed.
  std::optional<nlohmann::json> Status();

  // SIGCONT, then SIGTERM to every agent and the coordinator (SIGKILL after 5 s), so the
  // store is closed and may be opened by the test.
  void StopAll();

  // The whole coordinator log (every start appends to it).
  std::string CoordinatorLog() const;
  // The last lines of every daemon log, for failure messages.
  std::string Logs() const;

 private:
  std::string CoordinatorConfig() const;
  std::string AgentConfig(const std::string& id) const;

  std::string name_;
  ChaosClusterOptions options_;
  std::filesystem::path dir_;
  int port_ = 0;
  std::string endpoint_;
  std::unique_ptr<TmpfsMount> mount_;
  std::unique_ptr<cli::ChildProcess> coordinator_;
  std::map<std::string, std::unique_ptr<cli::ChildProcess>> agents_;
};

// The pids whose parent is `parent`, read from /proc/PID/stat.
std::vector<pid_t> ChildPids(pid_t parent);

}  // namespace orch::testing
