// AgentCore: the agent's decisions (docs/agent.md), as a pure function of events
// and time. AgentService is the shell that feeds it and performs its effects
// (agent/agent_effects.h).
//
// Events in, each with `now` (steady clock): the coordinator's messages, the
// driver's output and exit, a prepared (or refused) run, a model scan's or a
// fingerprint check's result, Stop / Drain, and Tick, due at NextDeadline().
// Effects out: messages to send (spooled or not), spool acks, runs to prepare,
// launch and cancel, worker jobs, log lines, the end of the agent.
//
// What it decides:
// - Hello (engines of the drivers not quarantined, the runs it runs, the
//   finished runs whose messages are not all acknowledged) every hello_retry
//   until Welcome; after Welcome, the spool resent and a Heartbeat every
//   Welcome.heartbeat_interval.
// - Resend: each unacknowledged message is timed from the first tick that sees
//   it unacknowledged (or its last resend); one that waited resend_after or
//   longer makes the agent say Hello again (then resend after the Welcome), even
//   while acks of other messages arrive.
// - Assign: refused (a spooled RunFinished{failed} with the code) when it is a
//   duplicate (ignored), while draining, without a driver for its engine, without
//   a free slot; else the run is prepared, then launched. Driver output becomes
//   DigestChunks of kRecordsPerChunk records; the exit, one RunFinished.
// - Quarantine (agent/driver_quarantine.h): a run's time is from its launch
//   (OnRunPrepared) to its exit; when a run quarantines its driver the agent
//   says Hello again without the driver's engine.
// - Every fingerprint_check while welcomed it asks for the fingerprint to be
//   recomputed (one at a time, on the worker); a changed one is adopted and
//   announced with Hello. Every model_rescan, likewise the model files.
// - Warm sessions (docs/agent.md): a prepared run of a driver whose version
//   hello offers sessions (DriverConfig::session_load_axes) with warm_sessions >
//   0 goes to the idle session whose key (driver, model path and sha256, the
//   load axes' values in the coordinate) matches; else a new session starts when
//   fewer than warm_sessions live, closing the least recently used idle one at
//   the limit; else the driver runs the job alone. A session job ends at its done
//   or error frame; the session then waits idle (closed after warm_idle, or when
//   its last error code says the engine is suspect). A session whose process
//   ends fails only its run in hand and is dropped; cancelling or timing out a
//   session's run kills its process. Idle sessions are advertised in Hello and
//   Heartbeat, and a Heartbeat goes out as a session becomes idle.
// - Stop: no new work, runs cancelled, stopped when the spool is acknowledged or
//   shutdown_grace has passed. Drain(grace): no new work, runs go on; stopped
//   when they have ended and the spool is acknowledged; at the end of `grace`
//   what still runs is cancelled as by Stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/agent_effects.h"
#include "agent/config.h"
#include "agent/driver_quarantine.h"
#include "agent/driver_run.h"
#include "agent/spool_ledger.h"
#include "protocol/messages.h"
#include "telemetry/exposition.h"

namespace orch::agent {

inline constexpr std::size_t kRecordsPerChunk = 256;

// Time as the core sees it: the steady clock's, or a test's.
using AgentTime = std::chrono::steady_clock::time_point;

struct AgentCoreOptions {
  AgentConfig config;
  std::string fingerprint_id;
  std::string fingerprint_json;  // canonical JSON of fingerprint_id, sent in Hello
  std::vector<std::string> model_hashes;
  // Sent in Hello ("hostname" names the host in `orch status`).
  std::vector<protocol::KeyValue> host_facts;
  std::chrono::milliseconds hello_retry{1000};     // Hello again while not welcomed
  std::chrono::milliseconds resend_after{5000};    // no ack for this long: re-register
  std::chrono::milliseconds shutdown_grace{5000};  // Stop(): wait this long for acks
  std::chrono::milliseconds fingerprint_check{60000};
  std::chrono::milliseconds model_rescan{30000};
  // When a driver is quarantined (faults in a row, within how long of launch).
  DriverQuarantineOptions quarantine = {};
};

// What the shell can do besides the options: set by AgentService.
struct AgentCoreFeatures {
  std::string incarnation;          // Hello::incarnation, one per agent process
  bool scans_models = false;        // ScanModelsEffect is served
  bool checks_fingerprint = false;  // CheckFingerprintEffect is served
};

// What the agent has done since it started, counted where it decides (its metrics:
// agent/agent_metrics.h, docs/metrics-endpoint.md "Agent metrics"). Keys are driver
// names (the config's), refusal codes (protocol/messages.h kRefused*) and run
// statuses (protocol::RunStatusName).
struct AgentCounters {
  std::uint64_t hellos = 0;                       // Hello messages sent (registrations tried)
  std::uint64_t welcomes = 0;                     // Welcomes received (registrations that took)
  std::uint64_t assignments = 0;                  // Assigns taken on (prepared, not refused)
  std::map<std::string, std::uint64_t> refusals;  // by code
  std::map<std::pair<std::string, std::string>, std::uint64_t> runs_ended;  // (driver, status)
  std::map<std::string, std::uint64_t> records;           // digest records, by driver
  std::map<std::string, std::uint64_t> sessions_started;  // by driver
  std::map<std::string, std::uint64_t> warm_jobs;         // jobs fed to a live session, by driver
  std::map<std::string, std::uint64_t> quarantines;       // by driver
  // From a run's launch to its end, every run that was launched.
  telemetry::Histogram run_seconds{telemetry::RunDurationBoundsSeconds()};
};

// What the agent holds now (its gauges).
struct AgentGauges {
  bool registered = false;  // welcomed by the coordinator
  bool draining = false;    // Drain or Stop: no new work
  std::int32_t slots = 0, free_slots = 0;
  std::size_t running = 0, preparing = 0;
  std::size_t sessions_idle = 0, sessions_busy = 0;
  std::size_t spool_unacked = 0;  // spooled messages the coordinator has not acknowledged
  struct Driver {
    std::string name, engine;
    bool quarantined = false;
  };
  std::vector<Driver> drivers;  // in config order
};

class AgentCore final {
 public:
  AgentCore(AgentCoreOptions options, AgentCoreFeatures features);

  // `spool`: what the spool holds now (after the shell failed the runs an earlier
  // agent left unfinished). Says Hello, or first scans the models when it does.
  AgentEffects Start(SpoolLedger spool, AgentTime now);
  // A new connection: Hello again (unless the first model scan is still going).
  AgentEffects OnReconnected(AgentTime now);
  AgentEffects OnMessage(const protocol::Message& message, AgentTime now);
  AgentEffects OnRunPrepared(const std::string& run_id, const std::string& experiment,
                             std::string job, const std::string& log_path, AgentTime now);
  AgentEffects OnRunNotPrepared(const protocol::Assign& assign, std::string_view code,
                                const std::string& reason, AgentTime now);
  AgentEffects OnDriverOutput(const std::string& run_id, std::string_view bytes, AgentTime now);
  AgentEffects OnDriverExit(const std::string& run_id, const ProcessExit& exit, AgentTime now);
  // A warm session's process ended, or wrote output, while it held no run.
  AgentEffects OnSessionExit(std::uint64_t session, const ProcessExit& exit, AgentTime now);
  AgentEffects OnIdleSessionOutput(std::uint64_t session, AgentTime now);
  AgentEffects OnModelsScanned(std::vector<std::string> hashes, AgentTime now);
  // `json`: the recomputed fingerprint's canonical JSON; empty when it could not be.
  AgentEffects OnFingerprint(std::string json, AgentTime now);
  // A spool write or ack failed: `spool` is what the spool really holds.
  AgentEffects OnSpoolFailed(SpoolLedger spool, AgentTime now);
  AgentEffects Stop(AgentTime now);
  AgentEffects Drain(std::chrono::milliseconds grace, AgentTime now);
  AgentEffects Tick(AgentTime now);

  // When Tick is next due; nullopt when nothing waits for time (stopped).
  std::optional<AgentTime> NextDeadline() const;

  bool welcomed() const { return welcomed_; }
  bool stopped() const { return stopped_; }
  std::size_t running() const { return runs_.size(); }
  const std::string& fingerprint_id() const { return options_.fingerprint_id; }
  const SpoolLedger& spool() const { return spool_; }
  std::size_t sessions() const { return sessions_.size(); }
  const AgentCounters& counters() const { return counters_; }
  AgentGauges Gauges() const;

 private:
  struct Run {
    DriverRun run;
    std::string experiment;
    std::string driver;  // its name in the config
    std::string log_path;
    AgentTime launched;
    std::uint64_t session = 0;  // the warm session it runs in; 0: none
  };
  // A live warm session: a driver process started as `DRIVER session`.
  struct Session {
    std::string key;
    std::string driver;
    protocol::WarmSession advert;
    std::string run_id;  // the run in hand; empty while idle
    AgentTime last_used;
  };

  const std::string& id() const { return options_.config.id; }
  void Log(LogEffect::Level level, std::string line);
  void SayHello(AgentTime now);
  void Arm(std::chrono::milliseconds after, AgentTime now) { next_tick_ = now + after; }
  void ArmHeartbeat(AgentTime now);
  bool OldestUnackedIsStale(AgentTime now);
  void MaybeCheckFingerprint(AgentTime now);
  void StartScan();
  std::int32_t FreeSlots() const;
  std::vector<std::string> RunIds() const;
  void OnWelcome(const protocol::Welcome& welcome, AgentTime now);
  void Launch(const std::string& run_id, const DriverConfig& driver, std::string job,
              const nlohmann::json& document, AgentTime now);
  bool MakeRoomForSession();
  void EndRun(std::map<std::string, Run>::iterator it, const ProcessExit& exit, AgentTime now);
  void EndSessionJob(std::map<std::string, Run>::iterator it, AgentTime now);
  void CloseSession(std::uint64_t id, const std::string& why);
  void CloseIdleSessions(AgentTime now, bool all);
  std::vector<protocol::WarmSession> IdleSessions() const;
  void OnAssign(const protocol::Assign& assign);
  void OnAck(const protocol::Ack& ack);
  void OnCancel(const protocol::CancelRun& cancel);
  void OnCancel(const protocol::CancelExperiment& cancel);
  void Cancel(const std::string& run_id);
  void Refuse(const protocol::Assign& assign, std::string_view code, const std::string& reason);
  void Spooled(const protocol::DigestChunk& chunk);
  void Spooled(const Run& run, const protocol::DigestChunk& chunk);  // counts its records
  void Spooled(const protocol::RunFinished& finished);
  const DriverConfig* DriverFor(const std::string& engine) const;
  std::string Engines() const;
  std::string QuarantinedDrivers() const;
  std::string NoDriverReason(const std::string& engine) const;
  void NoteRunEnding(const std::string& driver, const RunEnding& ending, AgentTime now);
  void BeginStop(AgentTime now);
  void MaybeStop();
  void Finish();
  AgentEffects Take();

  AgentCoreOptions options_;
  AgentCoreFeatures features_;
  AgentCounters counters_;
  AgentEffects out_;  // effects of the event being handled
  SpoolLedger spool_;
  std::map<std::string, Run> runs_;
  std::map<std::uint64_t, Session> sessions_;
  std::uint64_t next_session_ = 1;
  struct Preparing {
    DriverConfig driver;
    std::string job_id;
  };
  std::map<std::string, Preparing> preparing_;  // assigned runs not yet prepared
  DriverQuarantine quarantine_;                 // drivers no longer offered
  std::optional<AgentTime> next_tick_;
  bool welcomed_ = false;
  std::string last_reject_;  // the last Reject's reason, logged once
  bool draining_ = false;    // no new work; stop once everything is acknowledged
  bool stopping_ = false;    // Stop(): as draining, but with a deadline
  bool stopped_ = false;
  std::chrono::milliseconds heartbeat_{1000};
  // When each unacknowledged message ("RUN/SEQ") was first seen unacknowledged
  // (or last resent): one left unacknowledged for resend_after is resent, even
  // while acks for other messages keep arriving (a write the coordinator
  // refused, e.g. on a full disk, is never acknowledged).
  std::map<std::string, AgentTime> unacked_since_;
  AgentTime stop_deadline_{};
  // Drain(grace): when it passes with runs still going, they are cancelled (Stop).
  std::optional<AgentTime> drain_deadline_;
  AgentTime last_fingerprint_check_{};
  bool checking_fingerprint_ = false;
  bool scanning_ = false;
  bool scanned_once_ = false;
  AgentTime last_scan_{};
};

}  // namespace orch::agent
