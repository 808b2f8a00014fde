// ServerKeeper: the shell around ServerPool (agent/server_pool.h, which decides
// which server a job runs against). It starts launched servers, waits for their
// health, stops the ones replaced and, when destroyed, every one it started
// (docs/agent.md, "Servers").
//
// - A server starts through SpawnChild (base/spawn.h) in its own process group,
//   bound to die with the thread that started it (the event loop's), stdin from
//   /dev/null, stdout and stderr appended to LOG_DIR/ENGINE-N.log (kept).
// - Health: every kHealthPoll, an HTTP GET of the entry's health path on
//   127.0.0.1:PORT with a short timeout; status 200 = ready. A server that exits
//   first, or is not ready within start_timeout (it is then killed), fails the
//   job with engine_error naming the log and its last lines.
// - Stopping: SIGTERM to the group, SIGKILL to it after stop_timeout, then
//   reaped. Polled on the loop's timer when replacing a server; blocking, bounded
//   by stop_timeout, in the destructor.
// - Liveness between jobs: waitpid(WNOHANG) on the server's pid.
//
// Not thread-safe: everything runs on the io_context's thread. `done` runs once
// per Acquire (within Acquire for an attached or reused server), never after the
// keeper is destroyed.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/server_pool.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio
namespace spdlog {
class logger;
}  // namespace spdlog

namespace orch::agent {

// How often a starting server's health (and exit) is checked.
inline constexpr std::chrono::milliseconds kHealthPoll{100};

// What Acquire found for a job: a server (or none for an engine without a
// [[servers]] entry), or a refusal with its code (invalid_combination,
// engine_error, agent_busy, agent_draining) and why.
struct ServerOutcome {
  std::optional<JobServer> server;
  std::string code;  // empty: no refusal
  std::string message;
};

// The status code of GET `path` on 127.0.0.1:`port`; nullopt when there is no
// answer within `timeout` (refused, closed, not HTTP).
std::optional<int> HttpGetStatus(int port, const std::string& path,
                                 std::chrono::milliseconds timeout);

class ServerKeeper final {
 public:
  // `log_dir` holds the launched servers' logs (created when needed).
  ServerKeeper(boost::asio::io_context& io, std::vector<ServerConfig> servers, std::string log_dir,
               spdlog::logger& log);
  // Stops every server it started (SIGTERM, SIGKILL after stop_timeout).
  ~ServerKeeper();
  ServerKeeper(const ServerKeeper&) = delete;
  ServerKeeper& operator=(const ServerKeeper&) = delete;

  void Acquire(const std::string& run_id, const std::string& engine, const std::string& model,
               const AxisValues& coordinate, std::function<void(ServerOutcome)> done);
  // The run's job is over.
  void Release(const std::string& run_id);
  // Starts in progress fail (agent_draining); their servers are stopped.
  void AbortStarts();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::agent
