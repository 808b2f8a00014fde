#include "agent/agent_core.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/check.h"
#include "fingerprint/fingerprint_json.h"

namespace orch::agent {
namespace {

using Level = LogEffect::Level;
using nlohmann::json;

// Typed errors after which a session driver goes on (docs/driver-protocol.md):
// the engine is sound, only the job was wrong.
bool SessionSurvives(const std::string& code) {
  return code == "invalid_job" || code == "invalid_combination" || code == "model_missing" ||
         code == "sha256_mismatch";
}

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& ObjectAt(const json& object, const char* key) {
  static const json kEmpty = json::object();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

// The session a job may run in: its driver, its model file and the values of
// the driver's load axes in its coordinate ("\x01" marks an axis it lacks).
std::string SessionKey(const DriverConfig& driver, const json& document) {
  const json& model = ObjectAt(document, "model");
  const json& coordinate = ObjectAt(document, "coordinate");
  std::string key = driver.name + '\n' + StringAt(model, "path") + '\n' + StringAt(model, "sha256");
  for (const std::string& axis : *driver.session_load_axes) {
    key += '\n' + axis + '=' +
           (coordinate.contains(axis) ? StringAt(coordinate, axis.c_str()) : "\x01");
  }
  return key;
}

// What the coordinator is told of an idle session.
protocol::WarmSession Advert(const DriverConfig& driver, const json& document) {
  protocol::WarmSession advert{
      driver.engine, StringAt(ObjectAt(document, "model"), "requirement"), {}};
  const json& coordinate = ObjectAt(document, "coordinate");
  for (const std::string& axis : *driver.session_load_axes) {
    if (coordinate.contains(axis))
      advert.axes.push_back({axis, StringAt(coordinate, axis.c_str())});
  }
  return advert;
}

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
  out_.push_back(SendEffect{std::move(hello)});
  Arm(options_.hello_retry, now);
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
  Log(Level::kError, "driver " + driver + " quarantined: " + quarantine_.reason(driver) +
                         "; engine(s) offered now: " + Engines() +
                         ". Fix the driver and restart the agent");
  if (!stopped_ && !stopping_) SayHello(now);
}

void AgentCore::OnAssign(const protocol::Assign& assign) {
  // A repeated Assign is ignored, not refused: a refusal would end the run the
  // agent already holds.
  if (runs_.contains(assign.run_id) || preparing_.contains(assign.run_id)) return;  // a duplicate
  if (draining_ || stopping_) {
    return Refuse(assign, protocol::kRefusedDraining, "the agent is draining");
  }
  const DriverConfig* driver = DriverFor(assign.requirements.engine);
  if (driver == nullptr) {
    return Refuse(assign, protocol::kRefusedNoEngine, NoDriverReason(assign.requirements.engine));
  }
  if (FreeSlots() <= 0) return Refuse(assign, protocol::kRefusedBusy, "no free slot");
  preparing_.emplace(assign.run_id, Preparing{*driver, assign.job_id});
  out_.push_back(PrepareRunEffect{assign, *driver});
}

AgentEffects AgentCore::OnRunNotPrepared(const protocol::Assign& assign, std::string_view code,
                                         const std::string& reason, AgentTime) {
  preparing_.erase(assign.run_id);
  Refuse(assign, code, reason);
  return Take();
}

AgentEffects AgentCore::OnRunPrepared(const std::string& run_id, const std::string& experiment,
                                      std::string job, const std::string& log_path, AgentTime now) {
  auto prepared = preparing_.find(run_id);
  ORCH_CHECK(prepared != preparing_.end()) << "run " << run_id << " was not being prepared";
  Preparing preparing = std::move(prepared->second);
  preparing_.erase(prepared);
  spool_.BeginRun(run_id);
  DriverRun run(run_id, preparing.driver.name, kRecordsPerChunk);
  // The server the job runs against (a server engine's job) goes into the summary.
  json document = json::parse(job, nullptr, /*allow_exceptions=*/false);
  if (document.is_object() && document.contains("server"))
    run.set_server(document["server"].dump());
  runs_.emplace(run_id, Run{std::move(run), experiment, preparing.driver.name, log_path, now});
  // Before the launch, so that the coordinator hears RunStarted before any chunk.
  out_.push_back(SendEffect{protocol::RunStarted{run_id}});
  Log(Level::kInfo,
      "run " + run_id + ": job " + preparing.job_id + " on driver " + preparing.driver.name);
  Launch(run_id, preparing.driver, std::move(job), document, now);
  return Take();
}

// In the idle warm session that fits, in a new session, or alone.
void AgentCore::Launch(const std::string& run_id, const DriverConfig& driver, std::string job,
                       const json& document, AgentTime now) {
  Run& run = runs_.at(run_id);
  if (!driver.session_load_axes || options_.config.warm_sessions <= 0 || draining_ || stopping_) {
    out_.push_back(LaunchEffect{run_id, driver, std::move(job)});
    return;
  }
  std::string key = SessionKey(driver, document);
  for (auto& [session_id, session] : sessions_) {
    if (!session.run_id.empty() || session.key != key) continue;
    session.run_id = run_id;
    session.last_used = now;
    run.session = session_id;
    Log(Level::kInfo, "run " + run_id + ": in warm session " + std::to_string(session_id));
    out_.push_back(FeedSessionEffect{session_id, run_id, std::move(job)});
    return;
  }
  if (!MakeRoomForSession()) {  // every session is busy: the job runs alone
    out_.push_back(LaunchEffect{run_id, driver, std::move(job)});
    return;
  }
  std::uint64_t session_id = next_session_++;
  sessions_.emplace(session_id, Session{key, driver.name, Advert(driver, document), run_id, now});
  run.session = session_id;
  Log(Level::kInfo, "run " + run_id + ": starts warm session " + std::to_string(session_id) +
                        " of driver " + driver.name);
  out_.push_back(LaunchEffect{run_id, driver, std::move(job), session_id});
}

// Closes the least recently used idle sessions while warm_sessions are live;
// false when all of those are busy.
bool AgentCore::MakeRoomForSession() {
  auto limit = static_cast<std::size_t>(options_.config.warm_sessions);
  while (sessions_.size() >= limit) {
    auto lru = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.run_id.empty() &&
          (lru == sessions_.end() || it->second.last_used < lru->second.last_used)) {
        lru = it;
      }
    }
    if (lru == sessions_.end()) return false;
    CloseSession(lru->first, "least recently used of warm_sessions = " + std::to_string(limit));
  }
  return true;
}

void AgentCore::CloseSession(std::uint64_t session_id, const std::string& why) {
  if (sessions_.erase(session_id) == 0) return;
  Log(Level::kInfo, "closing warm session " + std::to_string(session_id) + ": " + why);
  out_.push_back(CloseSessionEffect{session_id});
}

// Idle sessions past warm_idle (all of them with `all`).
void AgentCore::CloseIdleSessions(AgentTime now, bool all) {
  std::vector<std::uint64_t> closing;
  for (const auto& [session_id, session] : sessions_) {
    if (session.run_id.empty() && (all || now - session.last_used >= options_.config.warm_idle)) {
      closing.push_back(session_id);
    }
  }
  for (std::uint64_t session_id : closing) {
    CloseSession(session_id, all ? "the agent takes no more work"
                                 : "idle for warm_idle_ms = " +
                                       std::to_string(options_.config.warm_idle.count()));
  }
}

std::vector<protocol::WarmSession> AgentCore::IdleSessions() const {
  std::vector<protocol::WarmSession> idle;
  for (const auto& [session_id, session] : sessions_) {
    if (session.run_id.empty()) idle.push_back(session.advert);
  }
  return idle;
}

AgentEffects AgentCore::OnDriverOutput(const std::string& run_id, std::string_view bytes,
                                       AgentTime now) {
  auto it = runs_.find(run_id);
  // Output that arrives after the run ended (its exit was handled first) is dropped.
  if (it == runs_.end()) return Take();
  std::vector<protocol::DigestChunk> chunks;
  Status status = it->second.run.Feed(bytes, &chunks);
  for (const protocol::DigestChunk& chunk : chunks) Spooled(chunk);
  if (!status.ok()) {
    // A driver that breaks the output protocol cannot be trusted for the rest of
    // the run; its exit ends the run as failed.
    Log(Level::kWarn, "run " + run_id + ": " + status.message() + "; killing the driver");
    out_.push_back(CancelRunEffect{run_id});
  } else if (it->second.session != 0 && it->second.run.finished()) {
    EndSessionJob(it, now);
  }
  return Take();
}

// A session's job sent its last frame: the run ends, the process lives on idle
// unless its error says the engine is suspect (it exits then) or the agent
// takes no more work.
void AgentCore::EndSessionJob(std::map<std::string, Run>::iterator it, AgentTime now) {
  std::uint64_t session_id = it->second.session;
  std::string code = it->second.run.error_code();
  bool goes_on = code.empty() || SessionSurvives(code);
  if (goes_on) it->second.run.set_session_goes_on();
  auto session = sessions_.find(session_id);
  bool idle = false;
  if (session != sessions_.end()) {
    if (goes_on && !draining_ && !stopping_) {
      session->second.run_id.clear();
      session->second.last_used = now;
      idle = true;
    } else {
      CloseSession(session_id,
                   goes_on ? "the agent takes no more work" : "its job ended with error " + code);
    }
  }
  EndRun(it, ProcessExit{ProcessExit::Reason::kExited, 0, 0, ""}, now);
  // The run is over here (its slot free, it is no longer running), while its last
  // chunk and RunFinished are still being made durable: the heartbeat goes out first
  // (the shell sends it at once, spooled messages once written), so the coordinator
  // gives the freed slot a job that fits the idle session without waiting for them.
  if (idle && welcomed_) {
    out_.push_back(SendEffect{protocol::Heartbeat{id(), RunIds(), FreeSlots(), IdleSessions()}});
  }
}

AgentEffects AgentCore::OnDriverExit(const std::string& run_id, const ProcessExit& exit,
                                     AgentTime now) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Take();
  // A session whose process ended is gone; only its run in hand fails.
  if (it->second.session != 0 && sessions_.erase(it->second.session) > 0) {
    Log(Level::kWarn, "warm session " + std::to_string(it->second.session) + " ended (" +
                          exit.Describe() + ") during run " + run_id);
  }
  EndRun(it, exit, now);
  return Take();
}

AgentEffects AgentCore::OnSessionExit(std::uint64_t session_id, const ProcessExit& exit,
                                      AgentTime) {
  if (sessions_.erase(session_id) > 0) {
    Log(Level::kWarn, "idle warm session " + std::to_string(session_id) + " ended (" +
                          exit.Describe() + "); the next job starts its driver afresh");
  }
  return Take();
}

AgentEffects AgentCore::OnIdleSessionOutput(std::uint64_t session_id, AgentTime) {
  CloseSession(session_id, "it wrote output while holding no job");
  return Take();
}

void AgentCore::EndRun(std::map<std::string, Run>::iterator it, const ProcessExit& exit,
                       AgentTime now) {
  const std::string run_id = it->first;
  DriverRun& run = it->second.run;
  // The last, partial chunk goes before the RunFinished: its chunk count
  // includes it.
  if (std::optional<protocol::DigestChunk> last = run.Flush()) Spooled(*last);
  protocol::RunFinished finished = run.Finish(exit, it->second.log_path);
  bool succeeded = finished.status == protocol::RunStatus::kSucceeded;
  out_.push_back(RunEndedEffect{run_id, succeeded});
  if (succeeded) {
    Log(Level::kInfo,
        "run " + run_id + ": succeeded, " + std::to_string(run.records()) + " records");
  } else {
    Log(Level::kWarn, "run " + run_id + ": " + finished.error);
  }
  Spooled(finished);
  RunEnding ending{finished.status, run.records(), run.error_code(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.launched),
                   finished.error};
  std::string driver = it->second.driver;
  runs_.erase(it);
  NoteRunEnding(driver, ending, now);
  MaybeStop();
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
