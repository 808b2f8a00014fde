// A real orch cluster on 127.0.0.1 for end-to-end tests: the `orch` binary started as a
// coordinator daemon and agent daemons (child processes, each in its own process group,
// logs in the cluster's temp dir), driven through the CLI. Everything it starts it stops
// by pid when it is destroyed; its temp dir is removed unless the test failed.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "tests/support/subprocess.h"

namespace orch::testing {

class LocalCluster {
 public:
  explicit LocalCluster(const std::string& name);
  ~LocalCluster();

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path data_dir() const { return dir_ / "orch-data"; }

  // Writes coordinator.toml and starts `orch coordinator`; waits for its endpoint file.
  // `listen` "tcp://127.0.0.1:*" picks a free port; a fixed port survives restarts.
  // `extra`: more [coordinator] keys (e.g. key, allowed_keys).
  void StartCoordinator(const std::string& listen, const std::string& extra = "",
                        const std::string& timings = kTestTimings);
  // The tests' heartbeat interval, agent timeout and lease: short, so faults show fast.
  static constexpr const char* kTestTimings =
      "heartbeat_interval_ms = 200\nagent_timeout_ms = 1500\nlease_ms = 3000\n";
  cli::ChildProcess& coordinator() { return *coordinator_; }
  const std::string& endpoint() const { return endpoint_; }

  // Writes agent-ID.toml (the test driver as engine "test-engine@1") and starts it.
  void StartAgent(const std::string& id);
  // The same with `drivers` instead of the test driver (e.g. LlamaCppDrivers()). The
  // agent's model cache is DIR/model-cache, shared by every agent of the cluster.
  struct Driver {
    std::string name;        // unique within the agent, e.g. "llamacpp-v0.4.0"
    std::string engine;      // e.g. "llama.cpp@v0.4.0"
    std::string executable;  // absolute path
  };
  void StartAgent(const std::string& id, const std::vector<Driver>& drivers,
                  const std::string& extra = "");  // extra: more [agent] keys
  // The same with the folders the agent scans for model files (`model_dirs`) and TOML
  // tables written after its [[drivers]] (e.g. [[servers]] entries, docs/agent.md).
  void StartAgent(const std::string& id, const std::vector<Driver>& drivers,
                  const std::string& extra, const std::vector<std::string>& model_dirs,
                  const std::string& tables);
  cli::ChildProcess& agent(const std::string& id) { return *agents_.at(id); }

  // Runs `orch ARGS... --coordinator ENDPOINT` to completion (killed after `limit`).
  ProcessResult Client(std::vector<std::string> args,
                       std::chrono::seconds limit = std::chrono::seconds(30));
  // `orch keygen NAME --role ROLE` into DIR/keys; `allow`: its public key also into
  // DIR/keys/allowed (the coordinator's allowed_keys = "keys/allowed").
  void Keygen(const std::string& name, const std::string& role, bool allow);
  // Client() as `user`: its secret key and the coordinator's public key from DIR/keys.
  ProcessResult As(const std::string& user, std::vector<std::string> args);
  // `orch status --json`, parsed; nullopt when the command failed.
  std::optional<nlohmann::json> Status();
  // Counts for one experiment from Status(): {"total", "succeeded", "failed", ...}.
  std::optional<nlohmann::json> Progress(const std::string& experiment);

  // Polls `done` every 100 ms until it holds or `timeout` passes.
  static bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

  // The last lines of every daemon log, for failure messages.
  std::string Logs() const;

  // A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
  static int FreePort();

 private:
  std::filesystem::path dir_;
  std::string endpoint_;
  std::unique_ptr<cli::ChildProcess> coordinator_;
  std::map<std::string, std::unique_ptr<cli::ChildProcess>> agents_;
};

// The llama.cpp drivers of this build tree, release v0.4.0 and b8390, as engines
// "llama.cpp@v0.4.0" and "llama.cpp@b8390".
std::vector<LocalCluster::Driver> LlamaCppDrivers();
// The built orch-driver-llamacpp-RELEASE.
std::string LlamaCppDriverBinary(const std::string& release);

// A spec with `jobs` teacher-forced jobs on the test engine: 2 baseline repeats plus
// jobs - 2 cells of knob.variant, each emitting `positions` records with `delay_ms`
// between them.
std::string TestEngineSpec(const std::string& name, int jobs, int positions, int delay_ms);

}  // namespace orch::testing
