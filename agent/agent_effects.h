// AgentEffects: what AgentCore decides and AgentService carries out, in the order
// given. The core changes its memory as if every effect succeeds; when a spool
// write or ack fails, the shell hands the core the spool's real ledger
// (AgentCore::OnSpoolFailed).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "agent/config.h"
#include "protocol/messages.h"

namespace orch::agent {

// Send one message to the coordinator (not spooled: Hello, Heartbeat, RunStarted).
struct SendEffect {
  protocol::Message message;
};

// Write a DigestChunk or RunFinished to the spool (fsync'd), then send it. A
// failed write is logged and the message still sent (the coordinator may store
// it), but it is not durable and will not be resent.
struct SpoolAndSendEffect {
  protocol::Message message;  // a DigestChunk or a RunFinished
};

// Drop an acknowledged message from the spool.
struct SpoolAckEffect {
  std::string run_id;
  std::uint64_t seq = 0;
};

// Send again every message the spool holds unacknowledged, in spool order.
struct ResendSpoolEffect {};

// Make `assign` ready to run on `driver`: resolve its model and build the job
// document (agent/driver_job.h), record the run as begun in the spool, open the
// driver's log (SPOOL/logs/RUN.log). Then tell the core: OnRunPrepared, or
// OnRunNotPrepared with the refusal code (kRefusedJob, a server's) and why.
struct PrepareRunEffect {
  protocol::Assign assign;
  DriverConfig driver;
};

// Start the driver with `job` on its stdin. Its output and exit come back as
// OnDriverOutput / OnDriverExit; a driver that cannot be started exits
// (OnDriverExit) with status 127 and the reason, after the current handler.
// `session` not 0: start the driver as `DRIVER session` (a warm session,
// docs/agent.md), the job its first job frame, stdin left open; its output and
// exit are the run's until the run ends, and the process lives on after it.
struct LaunchEffect {
  std::string run_id;
  DriverConfig driver;
  std::string job;
  std::uint64_t session = 0;
};

// Hand `job` to the idle warm session `session` (a job frame on its stdin, the
// run's timeout restarted): its output and exit are the run's from now on.
struct FeedSessionEffect {
  std::uint64_t session = 0;
  std::string run_id;
  std::string job;
};

// Close a warm session: end of file on its stdin, its process group killed if
// it has not exited after a grace. Its exit is not reported to the core.
struct CloseSessionEffect {
  std::uint64_t session = 0;
};

// Kill the run's driver (its exit follows, cancelled). Nothing when it has none.
struct CancelRunEffect {
  std::string run_id;
};

// The run is over: close its driver log (removed when it succeeded) and release
// its process after the current handler.
struct RunEndedEffect {
  std::string run_id;
  bool succeeded = false;
};

// Hash the model folders on the worker thread; the set comes back as
// OnModelsScanned.
struct ScanModelsEffect {};

// Recompute the host fingerprint on the worker thread; it comes back as
// OnFingerprint.
struct CheckFingerprintEffect {};

// The agent has stopped (drained or stopped, its spool acknowledged or its grace
// over): run the on-stopped callback.
struct StoppedEffect {};

struct LogEffect {
  enum class Level { kInfo, kWarn, kError };
  Level level = Level::kInfo;
  std::string line;
};

using AgentEffect =
    std::variant<SendEffect, SpoolAndSendEffect, SpoolAckEffect, ResendSpoolEffect,
                 PrepareRunEffect, LaunchEffect, FeedSessionEffect, CloseSessionEffect,
                 CancelRunEffect, RunEndedEffect, ScanModelsEffect, CheckFingerprintEffect,
                 StoppedEffect, LogEffect>;
using AgentEffects = std::vector<AgentEffect>;

}  // namespace orch::agent
