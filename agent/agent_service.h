// AgentService: the shell around AgentCore (agent/agent_core.h, which says
// what the agent decides; docs/agent.md). It decodes the coordinator's frames,
// feeds the core with the steady clock's `now`, and performs the core's effects:
// sends frames, writes and acks the spool on the spool's thread (sending each
// message once it is written, agent/spool_writer.h), prepares runs (resolves the model,
// begins the run in the spool, opens the driver's log), launches and cancels
// drivers through the ProcessLauncher, runs model scans and fingerprint checks on
// one worker thread and posts their results back, logs. It arms one steady_timer
// at the core's NextDeadline() and ticks the core when it fires.
//
// Transport is not owned: frames go out through `send`, events come in through
// OnEvent(). Not thread-safe: everything but the worker's jobs and the spool's
// operations runs on the io_context's thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_core.h"
#include "agent/model_resolver.h"
#include "agent/process_launcher.h"
#include "agent/spool.h"
#include "base/status.h"
#include "protocol/transport.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio
namespace spdlog {
class logger;
}  // namespace spdlog

namespace orch::agent {

struct AgentServiceOptions : AgentCoreOptions {
  // Recomputes the host fingerprint (canonical JSON; empty when it cannot). When
  // set, the agent calls it every `fingerprint_check` while registered, on the
  // worker thread (cli/agent_command.cc's re-reads only the driver files that
  // changed: agent/host_fingerprinter.h), and when the fingerprint changed (a
  // driver was upgraded, say) registers again with the new one.
  std::function<std::string()> fingerprint_json_provider;
  // Lists the model files the agent holds ("sha256:<hex>", agent/model_inventory.h).
  // When set it replaces `model_hashes`: it runs on the worker thread, never on the
  // loop (hashing a new 20 GB file takes minutes), first before the first Hello and
  // then every `model_rescan`; a changed set is announced with a new Hello. A scan
  // in progress is not interrupted: destroying the service waits for it. Scans and
  // fingerprint checks share the one worker thread, one at a time.
  std::function<std::vector<std::string>()> model_scan;
};

class AgentService final {
 public:
  using SendFn = std::function<Status(std::string_view frame)>;

  // Borrows io, launcher, spool, models and log, which must outlive the
  // service. `models` resolves each Assign's model requirement.
  AgentService(boost::asio::io_context& io, ProcessLauncher& launcher, Spool& spool,
               ModelResolver& models, spdlog::logger& log, AgentServiceOptions options,
               SendFn send);
  ~AgentService();
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  // Fails the runs an earlier agent left unfinished in the spool, then says
  // Hello.
  Status Start();
  // Frames now go through `send` (a new connection); says Hello again.
  void Reconnect(SendFn send);
  // One event from the transport.
  void OnEvent(const protocol::TransportEvent& event);

  // Stops taking work, cancels running drivers, waits up to shutdown_grace for
  // the spool to be acknowledged, then calls `on_stopped`. The spool keeps
  // whatever was not acked.
  void Stop();
  // Drains locally (what SIGTERM does with `stop_drain_ms` set): no new work,
  // running runs go on to their end; once they have and the spool is
  // acknowledged it stops. When `grace` has passed (checked at each heartbeat)
  // whatever still runs is cancelled as by Stop().
  void Drain(std::chrono::milliseconds grace);
  // Runs `on_stopped` once when a Drain or Stop has completed.
  void SetOnStopped(std::function<void()> on_stopped);

  // Blocks until every spool write, acknowledgement and resend handed to the
  // spool's thread has run (their results reach the loop after), so that the
  // caller may read the spool.
  void WaitForSpool();

  // The agent's Prometheus metrics (agent/agent_metrics.h), as exposition text.
  std::string MetricsText() const;

  bool welcomed() const;
  std::size_t running() const;
  bool stopped() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::agent
