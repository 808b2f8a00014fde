// AgentCore's runs (agent_core.h): an Assign prepared and launched, in a warm session
// or a process of its own, its output, and its end.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "agent/agent_core.h"
#include "base/check.h"

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
  ++counters_.assignments;
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
    ++counters_.warm_jobs[driver.name];
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
  ++counters_.sessions_started[driver.name];
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
  for (const protocol::DigestChunk& chunk : chunks) Spooled(it->second, chunk);
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
  if (std::optional<protocol::DigestChunk> last = run.Flush()) Spooled(it->second, *last);
  protocol::RunFinished finished = run.Finish(exit, it->second.log_path);
  ++counters_
        .runs_ended[{it->second.driver, std::string(protocol::RunStatusName(finished.status))}];
  counters_.run_seconds.Observe(std::chrono::duration<double>(now - it->second.launched).count());
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

}  // namespace orch::agent
