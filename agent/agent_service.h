// AgentService: the agent daemon's logic on one event loop (docs/agent.md).
//
// It registers with the coordinator (Hello -> Welcome), heartbeats, runs each
// Assign by spawning the driver whose engine equals requirements.engine, turns
// the driver's frames into RunStarted / DigestChunk (seq from 0, at most
// kRecordsPerChunk records) / RunFinished, writes each to the spool before
// sending it, and drops it from the spool when acknowledged. After every
// Welcome all unacknowledged messages are resent; when acknowledgements stall
// for `resend_after` it says Hello again (a restarted coordinator does not know
// it) and resends after the Welcome. A driver that crashes, hangs or writes
// garbage fails its run; the agent lives on. A driver whose runs keep failing
// at start-up (agent/driver_quarantine.h) is quarantined: the agent registers
// again without its engine and refuses its Assigns (kRefusedNoEngine). The
// model files it advertises are hashed on a worker thread (options.model_scan)
// while the loop goes on.
//
// Transport is not owned: frames go out through `send`, events come in through
// OnEvent(). Not thread-safe: everything runs on the io_context's thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config.h"
#include "agent/driver_quarantine.h"
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

inline constexpr std::size_t kRecordsPerChunk = 256;

struct AgentServiceOptions {
  AgentConfig config;
  std::string fingerprint_id;
  std::string fingerprint_json;  // canonical JSON of fingerprint_id, sent in Hello
  std::vector<std::string> model_hashes;
  // Sent in Hello ("hostname" names the host in `orch status`).
  std::vector<protocol::KeyValue> host_facts;
  std::chrono::milliseconds hello_retry{
      1000};  // Hello again while not welcomed
  std::chrono::milliseconds resend_after{
      5000};  // no ack for this long: re-register
  std::chrono::milliseconds shutdown_grace{
      5000};  // Stop(): wait this long for acks
  // Recomputes the host fingerprint (canonical JSON). When set, the agent calls it
  // every `fingerprint_check` while registered and, when the fingerprint changed (a
  // driver was upgraded, say), registers again with the new one. Runs on the loop.
  std::function<std::string()> fingerprint_json_provider;
  std::chrono::milliseconds fingerprint_check{60000};
  // Lists the model files the agent holds ("sha256:<hex>", agent/model_inventory.h).
  // When set it replaces `model_hashes`: it runs on a worker thread, never on the
  // loop (hashing a new 20 GB file takes minutes), first before the first Hello and
  // then every `model_rescan`; a changed set is announced with a new Hello. A scan
  // in progress is not interrupted: destroying the service waits for it.
  std::function<std::vector<std::string>()> model_scan;
  std::chrono::milliseconds model_rescan{30000};
  // When a driver is quarantined (faults in a row, within how long of launch).
  DriverQuarantineOptions quarantine = {};
};

class AgentService final {
 public:
  using SendFn = std::function<Status(std::string_view frame)>;

  // Borrows io, launcher, spool, models and log, which must outlive the
  // service. `models` resolves each Assign's model requirement.
  AgentService(boost::asio::io_context& io, ProcessLauncher& launcher,
               Spool& spool, ModelResolver& models, spdlog::logger& log,
               AgentServiceOptions options, SendFn send);
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

  bool welcomed() const;
  std::size_t running() const;
  bool stopped() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::agent
