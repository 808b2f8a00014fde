#include "agent/agent_core.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/check.h"
#include "fingerprint/fingerprint_json.h"

namespace orch::agent {
namespace {

using Level = LogEffect::Level;

}  // namespace

AgentCore::AgentCore(AgentCoreOptions options, AgentCoreFeatures features)
    : options_(std::move(options)),
      features_(std::move(features)),
      quarantine_(options_.quarantine) {}

AgentEffects AgentCore::Take() {
  AgentEffects effects;
  effects.swap(out_);
  return effects;
}

void AgentCore::Log(Level level, std::string line) {
  out_.push_back(LogEffect{level, std::move(line)});
}

AgentEffects AgentCore::Start(SpoolLedger spool, AgentTime now) {
  spool_ = std::move(spool);
  // The fingerprint and model hashes in the options are as of now: the periodic
  // checks count from here.
  last_fingerprint_check_ = now;
  last_scan_ = now;
  if (features_.scans_models) {
    Log(Level::kInfo, "hashing the model files in " +
                          std::to_string(options_.config.model_dirs.size()) +
                          " model_dirs entries before registering");
    StartScan();  // Hello follows the first scan
  } else {
    SayHello(now);
  }
  return Take();
}

AgentEffects AgentCore::OnReconnected(AgentTime now) {
  // While the first scan runs a Hello would offer no models; its end says Hello.
  if (!features_.scans_models || scanned_once_) SayHello(now);
  return Take();
}

std::vector<std::string> AgentCore::RunIds() const {
  // A run being prepared is on this agent too (its model resolving, its server starting,
  // which may take minutes): listed, its lease is renewed while it waits.
  std::vector<std::string> ids;
  for (const auto& [run_id, run] : runs_) ids.push_back(run_id);
  for (const auto& [run_id, preparing] : preparing_) ids.push_back(run_id);
  return ids;
}

void AgentCore::SayHello(AgentTime now) {
  protocol::Hello hello;
  hello.agent_id = id();
  for (const DriverConfig& driver : options_.config.drivers) {
    if (!quarantine_.quarantined(driver.name)) hello.capabilities.engines.push_back(driver.engine);
  }
  hello.capabilities.hardware_class = options_.config.hardware;
  hello.capabilities.gpus = options_.config.gpus;
  hello.capabilities.slots = options_.config.slots;
  hello.capabilities.model_hashes = options_.model_hashes;
  hello.fingerprint_id = options_.fingerprint_id;
  hello.fingerprint_json = options_.fingerprint_json;
  hello.host_facts = options_.host_facts;
  if (std::string quarantined = QuarantinedDrivers(); !quarantined.empty())
    hello.host_facts.push_back({"quarantined_drivers", quarantined});
  hello.running_runs = RunIds();
  hello.incarnation = features_.incarnation;
  hello.warm_sessions = IdleSessions();
  for (const std::string& run_id : spool_.FinishedUnacked()) {
    // A run still running is listed once, in running_runs: the coordinator counts
    // only those against its slots.
    if (!runs_.contains(run_id)) hello.delivering_runs.push_back(run_id);
  }
  // Until a Welcome answers this Hello, Tick says Hello again every hello_retry.
  welcomed_ = false;
  ++counters_.hellos;
  out_.push_back(SendEffect{std::move(hello)});
  Arm(options_.hello_retry, now);
}

AgentGauges AgentCore::Gauges() const {
  AgentGauges gauges;
  gauges.registered = welcomed_;
  gauges.draining = draining_ || stopping_;
  gauges.slots = options_.config.slots;
  gauges.free_slots = FreeSlots();
  gauges.running = runs_.size();
  gauges.preparing = preparing_.size();
  for (const auto& [session_id, session] : sessions_) {
    ++(session.run_id.empty() ? gauges.sessions_idle : gauges.sessions_busy);
  }
  gauges.spool_unacked = spool_.unacked();
  for (const DriverConfig& driver : options_.config.drivers) {
    gauges.drivers.push_back({driver.name, driver.engine, quarantine_.quarantined(driver.name)});
  }
  return gauges;
}

std::optional<AgentTime> AgentCore::NextDeadline() const {
  if (stopped_) return std::nullopt;
  std::optional<AgentTime> next = next_tick_;
  for (const auto& [session_id, session] : sessions_) {
    if (!session.run_id.empty()) continue;
    AgentTime idle_end = session.last_used + options_.config.warm_idle;
    if (!next || idle_end < *next) next = idle_end;
  }
  return next;
}

AgentEffects AgentCore::Tick(AgentTime now) {
  if (stopped_) return {};
  CloseIdleSessions(now, /*all=*/false);
  // An early call (the shell may wake for other events) does nothing more.
  if (!next_tick_ || now < *next_tick_) return Take();
  next_tick_.reset();
  // Deadlines first: a stop or drain that is due ends the agent (or its runs)
  // whatever else waits.
  if (stopping_ && now >= stop_deadline_) {
    Finish();
    return Take();
  }
  if (draining_ && !stopping_ && drain_deadline_ && now >= *drain_deadline_) {
    Log(Level::kInfo, "drain time is up: cancelling " + std::to_string(runs_.size()) + " runs");
    BeginStop(now);
    return Take();
  }
  if (!welcomed_) {
    SayHello(now);
    return Take();
  }
  if (OldestUnackedIsStale(now)) {
    Log(Level::kInfo, "a message unacknowledged for " +
                          std::to_string(options_.resend_after.count()) + " ms, " +
                          std::to_string(spool_.unacked()) + " spooled: registering again");
    // The Welcome resends the whole spool, so every message waits resend_after
    // afresh from this Hello rather than triggering another one at the next tick.
    for (auto& [key, since] : unacked_since_) since = now;
    SayHello(now);
    return Take();
  }
  MaybeCheckFingerprint(now);
  if (features_.scans_models && !scanning_ && now - last_scan_ >= options_.model_rescan) {
    StartScan();
  }
  // The runs it lists have their leases renewed by the coordinator.
  out_.push_back(SendEffect{protocol::Heartbeat{id(), RunIds(), FreeSlots(), IdleSessions()}});
  ArmHeartbeat(now);
  return Take();
}

// The next heartbeat, or the end of a drain when that comes first.
void AgentCore::ArmHeartbeat(AgentTime now) {
  auto after = heartbeat_;
  if (draining_ && drain_deadline_) {
    // ceil: a tick armed for `left` falls at or after the deadline; rounding down
    // could wake it just before, with nothing done and a zero wait armed again.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*drain_deadline_ - now);
    after = std::max(std::chrono::milliseconds(0), std::min(after, left));
  }
  Arm(after, now);
}

// Updates unacked_since_ from the spool; true when some message has waited for
// its acknowledgement resend_after or longer.
bool AgentCore::OldestUnackedIsStale(AgentTime now) {
  // Rebuilt from the spool, so acknowledged messages drop out of unacked_since_.
  std::map<std::string, AgentTime> still;
  bool stale = false;
  for (std::string& key : spool_.UnackedKeys()) {
    auto it = unacked_since_.find(key);
    AgentTime since = it == unacked_since_.end() ? now : it->second;
    stale = stale || now - since >= options_.resend_after;
    still.emplace(std::move(key), since);
  }
  unacked_since_ = std::move(still);
  return stale;
}

void AgentCore::MaybeCheckFingerprint(AgentTime now) {
  if (!features_.checks_fingerprint || checking_fingerprint_ ||
      now - last_fingerprint_check_ < options_.fingerprint_check) {
    return;
  }
  last_fingerprint_check_ = now;
  checking_fingerprint_ = true;
  out_.push_back(CheckFingerprintEffect{});
}

AgentEffects AgentCore::OnFingerprint(std::string json, AgentTime now) {
  checking_fingerprint_ = false;
  // Empty: the fingerprint could not be recomputed; the last one stays.
  if (stopped_ || json.empty() || json == options_.fingerprint_json) return Take();
  std::string new_id = fingerprint::FingerprintIdOfJson(json);
  Log(Level::kInfo,
      "fingerprint changed: " + options_.fingerprint_id + " -> " + new_id + "; registering again");
  options_.fingerprint_json = std::move(json);
  options_.fingerprint_id = std::move(new_id);
  SayHello(now);
  return Take();
}

void AgentCore::StartScan() {
  scanning_ = true;
  out_.push_back(ScanModelsEffect{});
}

AgentEffects AgentCore::OnModelsScanned(std::vector<std::string> hashes, AgentTime now) {
  scanning_ = false;
  last_scan_ = now;
  bool first = !scanned_once_;
  scanned_once_ = true;
  // The first scan always ends in a Hello: Start put it off until now.
  if (stopped_ || (!first && hashes == options_.model_hashes)) return Take();
  Log(Level::kInfo, std::to_string(hashes.size()) + " model files offered (" +
                        std::to_string(options_.model_hashes.size()) + " before); registering");
  options_.model_hashes = std::move(hashes);
  SayHello(now);
  return Take();
}

std::int32_t AgentCore::FreeSlots() const {
  if (draining_ || stopping_) return 0;
  // A run being prepared (its model resolved, its job document built) already
  // holds its slot.
  auto busy = static_cast<std::int32_t>(runs_.size() + preparing_.size());
  return std::max<std::int32_t>(0, options_.config.slots - busy);
}

void AgentCore::OnWelcome(const protocol::Welcome& welcome, AgentTime now) {
  welcomed_ = true;
  ++counters_.welcomes;
  last_reject_.clear();
  heartbeat_ = welcome.heartbeat_interval;
  Log(Level::kInfo, "welcomed by " + welcome.coordinator_id + "; resending " +
                        std::to_string(spool_.unacked()) + " spooled messages");
  // Whatever was not acknowledged before this registration goes out again; the
  // coordinator acknowledges what it already stored as a duplicate.
  out_.push_back(ResendSpoolEffect{});
  Arm(heartbeat_, now);
}

// `code`: why, for the coordinator (protocol/messages.h, kRefused*).
void AgentCore::Refuse(const protocol::Assign& assign, std::string_view code,
                       const std::string& reason) {
  Log(Level::kWarn, "run " + assign.run_id + ": refused: " + reason);
  ++counters_.refusals[std::string(code)];
  // Spooled like any result, so that the refusal reaches the coordinator across a
  // reconnect. Zero chunks before RunStarted is what the coordinator reads as a
  // refusal; the code says whether it is transient (coordinator/failure_kind.h).
  nlohmann::json summary = {{"error", {{"code", code}, {"message", reason}}}};
  Spooled(protocol::RunFinished{assign.run_id, protocol::RunStatus::kFailed, summary.dump(),
                                "agent " + id() + " refused the run: " + reason, 0});
}

void AgentCore::Spooled(const protocol::DigestChunk& chunk) {
  spool_.AddChunk(chunk.run_id, chunk.seq);
  out_.push_back(SpoolAndSendEffect{chunk});
}

void AgentCore::Spooled(const Run& run, const protocol::DigestChunk& chunk) {
  counters_.records[run.driver] += chunk.records.size();
  Spooled(chunk);
}

void AgentCore::Spooled(const protocol::RunFinished& finished) {
  spool_.AddFinished(finished.run_id);
  out_.push_back(SpoolAndSendEffect{finished});
}

// The first driver for `engine` that is not quarantined.
const DriverConfig* AgentCore::DriverFor(const std::string& engine) const {
  for (const DriverConfig& driver : options_.config.drivers) {
    if (driver.engine == engine && !quarantine_.quarantined(driver.name)) return &driver;
  }
  return nullptr;
}

std::string AgentCore::Engines() const {
  std::string engines;
  for (const DriverConfig& driver : options_.config.drivers) {
    if (quarantine_.quarantined(driver.name)) continue;
    engines += (engines.empty() ? "" : ", ") + driver.engine;
  }
  return engines.empty() ? "none" : engines;
}

// "NAME (ENGINE): WHY; ..." for every quarantined driver; empty when none is.
std::string AgentCore::QuarantinedDrivers() const {
  std::string out;
  for (const DriverConfig& driver : options_.config.drivers) {
    if (!quarantine_.quarantined(driver.name)) continue;
    out += (out.empty() ? "" : "; ") + driver.name + " (" + driver.engine +
           "): " + quarantine_.reason(driver.name);
  }
  return out;
}

// Why an Assign for `engine` found no driver.
std::string AgentCore::NoDriverReason(const std::string& engine) const {
  for (const DriverConfig& driver : options_.config.drivers) {
    if (driver.engine == engine && quarantine_.quarantined(driver.name)) {
      return "driver " + driver.name + " for engine \"" + engine +
             "\" is quarantined on this agent (" + quarantine_.reason(driver.name) +
             "); fix it and restart the agent";
    }
  }
  return "no driver for engine \"" + engine + "\" (this agent has: " + Engines() + ")";
}

// Counts a run's ending towards its driver's quarantine; registers again without
// the driver's engine when this run quarantined it.
void AgentCore::NoteRunEnding(const std::string& driver, const RunEnding& ending, AgentTime now) {
  if (!quarantine_.Observe(driver, ending)) return;
  ++counters_.quarantines[driver];
  Log(Level::kError, "driver " + driver + " quarantined: " + quarantine_.reason(driver) +
                         "; engine(s) offered now: " + Engines() +
                         ". Fix the driver and restart the agent");
  if (!stopped_ && !stopping_) SayHello(now);
}

void AgentCore::OnAck(const protocol::Ack& ack) {
  spool_.Ack(ack.run_id, ack.seq);
  out_.push_back(SpoolAckEffect{ack.run_id, ack.seq});
  MaybeStop();
}

void AgentCore::OnCancel(const protocol::CancelRun& cancel) {
  if (runs_.contains(cancel.run_id)) Cancel(cancel.run_id);
}

void AgentCore::OnCancel(const protocol::CancelExperiment& cancel) {
  for (const auto& [run_id, run] : runs_) {
    if (run.experiment == cancel.experiment) Cancel(run_id);
  }
}

void AgentCore::Cancel(const std::string& run_id) {
  Log(Level::kInfo, "run " + run_id + ": cancelled by the coordinator");
  out_.push_back(CancelRunEffect{run_id});
}

AgentEffects AgentCore::OnSpoolFailed(SpoolLedger spool, AgentTime) {
  // The spool may hold fewer messages than the ledger said: a stop waiting for
  // acks may be able to end now.
  spool_ = std::move(spool);
  MaybeStop();
  return Take();
}

AgentEffects AgentCore::Stop(AgentTime now) {
  BeginStop(now);
  return Take();
}

// No new work, running drivers cancelled, up to shutdown_grace for the acks.
void AgentCore::BeginStop(AgentTime now) {
  if (stopping_ || stopped_) return;
  stopping_ = true;
  stop_deadline_ = now + options_.shutdown_grace;
  CloseIdleSessions(now, /*all=*/true);
  for (const auto& [run_id, run] : runs_) out_.push_back(CancelRunEffect{run_id});
  Arm(options_.shutdown_grace, now);
  MaybeStop();
}

AgentEffects AgentCore::Drain(std::chrono::milliseconds grace, AgentTime now) {
  if (stopping_ || stopped_) return Take();
  Log(Level::kInfo, "draining for up to " + std::to_string(grace.count()) + " ms: finishing " +
                        std::to_string(runs_.size()) + " runs");
  draining_ = true;
  drain_deadline_ = now + grace;
  CloseIdleSessions(now, /*all=*/true);
  MaybeStop();
  // Re-armed so that a grace shorter than the heartbeat interval is kept.
  if (!stopped_ && welcomed_) ArmHeartbeat(now);
  return Take();
}

void AgentCore::MaybeStop() {
  if (stopped_ || !(draining_ || stopping_) || !runs_.empty() || !preparing_.empty() ||
      spool_.unacked() > 0) {
    return;
  }
  Finish();
}

void AgentCore::Finish() {
  if (stopped_) return;
  stopped_ = true;
  while (!sessions_.empty()) CloseSession(sessions_.begin()->first, "the agent stopped");
  next_tick_.reset();
  Log(Level::kInfo, "agent " + id() + " stopped; " + std::to_string(spool_.unacked()) +
                        " messages left in the spool");
  out_.push_back(StoppedEffect{});
}

AgentEffects AgentCore::OnMessage(const protocol::Message& message, AgentTime now) {
  if (stopped_) return {};
  if (const auto* welcome = std::get_if<protocol::Welcome>(&message)) {
    OnWelcome(*welcome, now);
  } else if (const auto* reject = std::get_if<protocol::Reject>(&message)) {
    // Said once per reason: a Hello refused every hello_retry logs one line, not one
    // a second.
    if (reject->reason != last_reject_) {
      Log(Level::kError,
          "coordinator rejected agent " + id() + ": " + reject->reason +
              (welcomed_ ? ""
                         : " (said once; retrying every " +
                               std::to_string(options_.hello_retry.count()) + " ms)"));
      last_reject_ = reject->reason;
    }
    welcomed_ = false;
    Arm(options_.hello_retry, now);
  } else if (const auto* assign = std::get_if<protocol::Assign>(&message)) {
    OnAssign(*assign);
  } else if (const auto* ack = std::get_if<protocol::Ack>(&message)) {
    OnAck(*ack);
  } else if (const auto* cancel = std::get_if<protocol::CancelRun>(&message)) {
    OnCancel(*cancel);
  } else if (const auto* cancel = std::get_if<protocol::CancelExperiment>(&message)) {
    OnCancel(*cancel);
  } else if (std::holds_alternative<protocol::Drain>(message)) {
    Log(Level::kInfo, "draining: finishing " + std::to_string(runs_.size()) + " runs");
    // From the coordinator: no deadline, the runs go on until they end.
    draining_ = true;
    CloseIdleSessions(now, /*all=*/true);
    MaybeStop();
  } else {
    Log(Level::kWarn,
        "ignoring " + std::string(protocol::MessageName(message)) + " from the coordinator");
  }
  return Take();
}

}  // namespace orch::agent
