// ServerPool: which inference server each job of a server engine runs against
// (docs/agent.md, "Servers"), as a pure function of the [[servers]] entries, the
// job and what the shell reports. No I/O: ServerKeeper (agent/server_keeper.h)
// starts, probes and stops the processes and tells the pool what happened.
//
// - An attached entry (url) serves every job of its engine.
// - A launched entry runs at most one server at a time. A job's server-level
//   coordinate is its model plus the values of the axes the entry maps; a server
//   launched for the same coordinate is reused (jobs_before counts the jobs it
//   ran before this one), one for another coordinate is stopped and a new one
//   launched, unless a job still runs on it or it is still starting (then the job
//   is refused agent_busy: the coordinator offers it again later).
// - A job whose coordinate has a mapped axis with a value the entry does not map
//   is refused invalid_combination, naming the axis, the value and the entry.
// - A server found dead (the shell's `alive` says so) is forgotten and launched
//   again; the job then runs with jobs_before 0.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/config.h"

namespace orch::agent {

// A job's axis values by name (its Assign's coordinate).
using AxisValues = std::map<std::string, std::string>;

// The server a job runs against: the job document's `server` object.
struct JobServer {
  std::string url = {};
  std::string api_key_file = {};
  std::string mode = {};  // "launched" or "attached"
  std::int64_t jobs_before = 0;
  std::string log = {};        // launched only: the server's stdout and stderr
  AxisValues coordinate = {};  // launched only: the server-level axes it was launched with
};

// What to start: argv (placeholders replaced, axis arguments appended) and the
// environment added to the agent's.
struct ServerLaunch {
  std::vector<std::string> argv;
  std::vector<std::string> env;
};

// The server-level coordinate of a launched entry: model and mapped axes.
struct ServerKey {
  std::string model = {};
  AxisValues axes = {};
  bool operator==(const ServerKey&) const = default;
};

struct ServerDecision {
  enum class Kind {
    kNone,      // the engine has no [[servers]] entry: the job carries no server
    kAttached,  // `server` is the job's (taken: Release when the run ends)
    kReused,    // `server` is the job's (taken)
    kLaunch,    // start a server for `key` (stopping `stop_pid` first when set)
    kRefused,   // `code` and `message` say why
  };
  Kind kind = Kind::kNone;
  std::size_t entry = 0;
  JobServer server = {};
  ServerKey key = {};
  std::optional<int> stop_pid = {};
  std::string code = {};
  std::string message = {};
};

// `launch`'s arguments with {model}, {port} and {host} (127.0.0.1) replaced,
// then each mapped axis's arguments (in axis-name order; the value's own mapping,
// else the axis's "*" mapping with {value} replaced), and its environment.
ServerLaunch ExpandLaunch(const ServerConfig& server, const ServerKey& key, int port);

class ServerPool final {
 public:
  explicit ServerPool(std::vector<ServerConfig> servers);

  // The server for `run_id`'s job. `alive(pid)` tells whether a launched server
  // still runs. kLaunch marks the entry as starting (no other job takes it) and,
  // with stop_pid, forgets the server it replaces.
  ServerDecision Choose(const std::string& run_id, const std::string& engine,
                        const std::string& model, const AxisValues& coordinate,
                        const std::function<bool(int pid)>& alive);

  // The starting server of `entry` was spawned: its pid, port and log.
  void Spawned(std::size_t entry, int pid, int port, std::string log);
  // It answered its health check: it serves `run_id` (jobs_before 0).
  JobServer Ready(std::size_t entry, const std::string& run_id);
  // It could not be started, or never became healthy (the shell has reaped it).
  void Failed(std::size_t entry);
  // The run's job is over; its server may be replaced.
  void Release(const std::string& run_id);

  // The pids of every launched server (to stop at shutdown).
  std::vector<int> Pids() const;
  const ServerConfig& entry(std::size_t index) const { return servers_[index]; }

 private:
  struct Launched {
    ServerKey key = {};
    bool ready = false;
    int pid = -1;  // -1 until spawned
    std::string url = {};
    std::string log = {};
    std::int64_t jobs = 0;             // jobs started on it
    std::set<std::string> users = {};  // runs using it now
  };

  std::optional<std::size_t> EntryFor(const std::string& engine) const;
  ServerDecision Attach(std::size_t entry, const std::string& run_id);
  ServerDecision ForLaunchEntry(std::size_t entry, const std::string& run_id,
                                const std::string& model, const AxisValues& coordinate,
                                const std::function<bool(int)>& alive);
  JobServer Take(std::size_t entry, const std::string& run_id);

  std::vector<ServerConfig> servers_;
  std::map<std::size_t, Launched> launched_;           // by entry
  std::map<std::size_t, std::int64_t> attached_jobs_;  // by entry
  std::map<std::string, std::size_t> users_;           // run -> entry
};

}  // namespace orch::agent
