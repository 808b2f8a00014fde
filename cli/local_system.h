// LocalSystem: the coordinator and agents that `orch run` starts on this
// machine, as child processes in their own process groups, each logging to a
// file under DATA_DIR/local/. Stop() (also the destructor) stops agents first
// (SIGTERM: each cancels its drivers' process groups and waits for the
// coordinator to acknowledge what it spooled), then the coordinator (SIGTERM:
// it closes its store), killing whatever has not exited after a grace period.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/child_process.h"

namespace orch::cli {

// A [[servers]] entry of the local agents: attach to `url`, or launch `program`
// (a llama-server) with the llama-server preset (docs/agent.md, "Servers").
struct LocalServer {
  std::string engine;
  std::string url;
  std::string program;
};

struct LocalAgentSpec {
  std::string hardware = "cpu";
  std::vector<std::string> model_dirs;                       // absolute; folders or single files
  std::int32_t driver_threads = 0;                           // 0: the driver's default
  std::vector<std::pair<std::string, std::string>> drivers;  // engine -> executable
  std::vector<LocalServer> servers;
};

class LocalSystem final {
 public:
  // `run_dir` holds configs and logs; `data_dir` is the coordinator's.
  LocalSystem(std::string data_dir, std::string run_dir)
      : data_dir_(std::move(data_dir)), run_dir_(std::move(run_dir)) {}
  ~LocalSystem() { Stop(); }
  LocalSystem(const LocalSystem&) = delete;
  LocalSystem& operator=(const LocalSystem&) = delete;

  // Makes throwaway keys under RUN_DIR/keys (orch keygen's files): the
  // coordinator's, one per agent local-1..N, and an admin key for `orch run`'s
  // own requests, whose public halves go to RUN_DIR/keys/allowed. The daemons
  // started afterwards use them: the local cluster is authenticated too.
  Status MakeKeys(int agents);
  const std::string& admin_key() const { return admin_key_; }
  const std::string& coordinator_public_key() const { return coordinator_public_; }

  // Starts the coordinator on 127.0.0.1, on a port that was free a moment before, and
  // agents local-1..local-N registered with it, at once: the agents check their
  // drivers, fingerprint the host and hash their model files while the coordinator
  // opens its store. Returns the endpoint once the coordinator has written it, after
  // writing DATA_DIR/client.json (cli/client_file.h) for other terminals; Stop()
  // marks that file ended. When the port was taken meanwhile, all is started again on
  // another (3 tries). The error names the log and, when the store is locked, the
  // process that holds it.
  Result<std::string> Start(const std::string& orch, int agents, const LocalAgentSpec& spec);
  // Where Start gets the port of its `attempt` (1, 2, 3): by default a port free a moment
  // before (FreeLocalPort). Tests choose a taken one.
  using PortChooser = std::function<Result<int>(int attempt)>;
  void SetPortChooser(PortChooser chooser) { choose_port_ = std::move(chooser); }

  // The exit status of the first daemon that exited, with its log; empty when
  // all still run.
  std::string ExitedDaemon();
  void Stop();

  const std::string& run_dir() const { return run_dir_; }

 private:
  // Launches the coordinator listening on `endpoint`.
  Status LaunchCoordinator(const std::string& orch, const std::string& endpoint);
  // Waits until the coordinator has written its endpoint (it listens then).
  Result<std::string> WaitForCoordinator();
  Status StartAgents(const std::string& orch, const std::string& endpoint, int count,
                     const LocalAgentSpec& spec);

  std::string data_dir_;
  std::string run_dir_;
  std::unique_ptr<ChildProcess> coordinator_;
  std::vector<ChildProcess> agents_;
  std::vector<std::string> agent_logs_;
  std::string keys_dir_;  // empty until MakeKeys
  std::string admin_key_;
  std::string coordinator_public_;
  std::string endpoint_;  // empty until the coordinator is up, and after Stop
  PortChooser choose_port_;
};

// A TCP port on 127.0.0.1 that was free a moment ago: the kernel's choice for a bind to
// port 0, released at once. (Another process may take it before the coordinator binds
// it: LocalSystem::Start then tries another.)
Result<int> FreeLocalPort();

}  // namespace orch::cli
