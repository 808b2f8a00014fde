#include "coordinator/coordinator_core.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "coordinator/failure_kind.h"

namespace orch::coordinator {
namespace {

using store::JobState;
using store::RunState;

template <typename T>
void Send(Effects& out, const std::string& peer, T message) {
  out.push_back(SendEffect{peer, protocol::Message(std::move(message))});
}

RunState ToRunState(protocol::RunStatus status) {
  switch (status) {
    case protocol::RunStatus::kSucceeded:
      return RunState::kSucceeded;
    case protocol::RunStatus::kCancelled:
      return RunState::kCancelled;
    // The store has no timed-out state: a run its agent timed out is a failed run,
    // and its error says why.
    case protocol::RunStatus::kFailed:
    case protocol::RunStatus::kTimedOut:
      break;
  }
  return RunState::kFailed;
}

// When a stored run ended: the time its result was received, else now.
Millis EndedAt(const store::RunRecord& record, Millis now) {
  return record.ended_at_ms > 0 ? Millis(record.ended_at_ms) : now;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

CoordinatorCore::CoordinatorCore(CoordinatorOptions options, LogSink log)
    : options_(std::move(options)), log_(std::move(log)), agents_(options_.agent_timeout) {}

// --- events ---

Effects CoordinatorCore::OnMessage(const std::string& peer, protocol::Message message, Millis now) {
  Effects out;
  if (auto* m = std::get_if<protocol::Hello>(&message)) {
    OnHello(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::Heartbeat>(&message)) {
    OnHeartbeat(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::RunStarted>(&message)) {
    OnRunStarted(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::DigestChunk>(&message)) {
    OnChunk(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::RunFinished>(&message)) {
    OnFinished(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::Submit>(&message)) {
    OnSubmit(peer, std::move(*m), now, out);
    // New jobs are offered to every agent at once rather than at the next Tick.
    Dispatch(now, out);
  } else if (auto* m = std::get_if<protocol::StatusRequest>(&message)) {
    Send(out, peer, Status(*m, now));
  } else if (auto* m = std::get_if<protocol::CancelExperiment>(&message)) {
    OnCancel(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::Drain>(&message)) {
    OnDrain(peer, *m, now, out);
  } else if (auto* m = std::get_if<protocol::Retry>(&message)) {
    OnRetry(peer, *m, now, out);
  } else {
    Log("ignoring " + std::string(protocol::MessageName(message)) + " from " + peer +
        ": not a message the coordinator accepts");
  }
  return out;
}

Effects CoordinatorCore::OnDisconnected(const std::string& peer, Millis now) {
  Effects out;
  const AgentEntry* agent = agents_.Find(peer);
  if (agent != nullptr && agent->state != protocol::AgentState::kDisconnected) {
    // The agent may come back (a dropped connection, a restart) and re-adopt its
    // runs with Hello; only a lease expiry gives them up.
    agents_.Disconnect(peer);
    std::string runs = std::to_string(runs_.CountOn(peer)) + " runs in flight keep their leases";
    Log("agent " + peer + " disconnected; " + runs);
    Record(out, now, "agent.departed", peer, "connection closed; " + runs);
  }
  return out;
}

// Why a Hello whose agent id is not its connection's is refused. A connection speaks
// under an alias "ID~..." (protocol/peer_names.h) while another live connection holds
// ID: two agents were given one id.
std::string CoordinatorCore::WhyIdRefused(const protocol::Hello& hello,
                                          const std::string& peer) const {
  if (peer.rfind(hello.agent_id + "~", 0) != 0) {
    return "agent id " + hello.agent_id + " does not match its connection id " + peer;
  }
  const AgentEntry* holder = agents_.Find(hello.agent_id);
  std::string where = holder == nullptr || holder->host.empty() ? "" : " on host " + holder->host;
  return "agent id " + hello.agent_id + " is in use by another agent connected" + where +
         " (this one runs on host " + (HostOf(hello).empty() ? "?" : HostOf(hello)) +
         "): two agents were given one id; give each its own `id` in its config. This one is "
         "refused while the other stays connected.";
}

void CoordinatorCore::OnHello(const std::string& peer, const protocol::Hello& hello, Millis now,
                              Effects& out) {
  // Results are accepted by connection id (FromItsAgent): an agent registered
  // under another id could speak for that agent's runs.
  if (hello.agent_id != peer) {
    Send(out, peer, protocol::Reject{protocol::kProtocolVersion, WhyIdRefused(hello, peer)});
    return;
  }
  const AgentEntry* before = agents_.Find(hello.agent_id);
  std::string quarantined_before = before == nullptr ? "" : before->quarantined;
  // The same agent process registering again (its messages went unacknowledged, its
  // connection dropped): it may have built this Hello before an Assign reached it.
  bool same_process =
      before != nullptr && !hello.incarnation.empty() && before->incarnation == hello.incarnation;
  AgentEntry& agent = agents_.Register(hello, now);
  NoteRegistration(hello, quarantined_before, now, out);
  if (!hello.fingerprint_id.empty() && !hello.fingerprint_json.empty()) {
    out.push_back(PutFingerprintEffect{hello.fingerprint_id, hello.fingerprint_json});
  }
  Send(out, peer,
       protocol::Welcome{protocol::kProtocolVersion, options_.id, options_.heartbeat_interval});
  // Runs the agent finished but still delivers from its spool are its own too:
  // releasing them would requeue a job whose results are on their way.
  std::vector<std::string> kept = hello.running_runs;
  kept.insert(kept.end(), hello.delivering_runs.begin(), hello.delivering_runs.end());
  for (const std::string& run_id : kept) {
    RunEntry* run = runs_.Find(run_id);
    if (run == nullptr) {
      Log("agent " + peer + " lists unknown run " + run_id + "; ignored");
    } else if (run->InFlight() && run->agent_id == agent.id) {
      runs_.Renew(*run, now + options_.lease);
      Log("agent " + peer + " re-adopted run " + run_id);
    }
  }
  ReleaseUnlisted(agent, kept, same_process, now, out);
  // Only running runs hold a slot; a run being delivered does not.
  agent.free_hint = agent.capabilities.slots - static_cast<std::int32_t>(hello.running_runs.size());
  agent.delivering.clear();  // counted again from its next heartbeat
  // A new Hello is a new connection (maybe a restarted agent): earlier cancels may
  // never have arrived, so they are sent again.
  agent.cancel_sent.clear();
  CancelStale(agent, hello.running_runs, out);
  // A drain asked for while it was away (or before it reconnected) still holds.
  if (agent.drain_requested) Send(out, peer, protocol::Drain{agent.id});
  Dispatch(now, out);
}

// One line per registration: who came, with what (an admin's answer to "did box-2 come
// back, and with which engines?"), logged and recorded in the event log; a driver
// quarantine that changed with it is recorded too.
void CoordinatorCore::NoteRegistration(const protocol::Hello& hello,
                                       const std::string& quarantined_before, Millis now,
                                       Effects& out) {
  const protocol::Capabilities& has = hello.capabilities;
  std::string engines;
  for (const std::string& engine : has.engines) engines += (engines.empty() ? "" : ", ") + engine;
  std::string host = HostOf(hello);
  std::string what = (host.empty() ? std::string() : "host " + host + ", ") + has.hardware_class +
                     ", " + std::to_string(has.slots) + (has.slots == 1 ? " slot" : " slots") +
                     ", engines " + (engines.empty() ? "none" : engines) + ", " +
                     std::to_string(has.model_hashes.size()) + " model files, " +
                     std::to_string(hello.running_runs.size()) + " runs in flight";
  Log("agent " + hello.agent_id + " registered: " + what);
  Record(out, now, "agent.registered", hello.agent_id, what);
  const AgentEntry* agent = agents_.Find(hello.agent_id);
  if (agent != nullptr && agent->quarantined != quarantined_before) {
    std::string detail = agent->quarantined.empty() ? "none" : agent->quarantined;
    Log("agent " + hello.agent_id + " quarantined drivers: " + detail);
    Record(out, now, "agent.quarantine", hello.agent_id, detail);
  }
}

// Runs the agent still runs that the coordinator gave up (their lease expired
// while the agent was paused or cut off, or the coordinator restarted after
// they were lost): the agent is told once to cancel each, and its slots are
// counted by what it reports (free_hint) until it has.
void CoordinatorCore::CancelStale(AgentEntry& agent, const std::vector<std::string>& running,
                                  Effects& out) {
  std::set<std::string> still;
  for (const std::string& run_id : running) {
    if (run_id.empty()) continue;  // names no run: nothing to cancel (Cancel{""} is invalid)
    const RunEntry* run = runs_.Find(run_id);
    if (run != nullptr && run->InFlight() && run->agent_id == agent.id) continue;
    still.insert(run_id);
    if (agent.cancel_sent.contains(run_id)) continue;
    Log("agent " + agent.id + " still runs " + run_id +
        ", which is no longer its; asking it to cancel");
    Send(out, agent.id, protocol::CancelRun{run_id});
  }
  // Keeps only runs still listed, so a run the agent has dropped is forgotten and
  // the set stays as small as what the agent reports.
  agent.cancel_sent = std::move(still);
}

// Slots the agent can fill now: its own count of free slots (free_hint, when
// reported) and never more than its slots less the runs it holds here. A run it is
// only delivering frees its slot, but at most one such run per slot: an agent runs
// at most one job ahead of its spool per slot, so results never trail far behind
// (nor their leases run out while they wait for the disk).
std::int32_t CoordinatorCore::FreeSlots(const AgentEntry& agent) const {
  std::int32_t delivering = 0;
  for (const std::string& run_id : agent.delivering) {
    const RunEntry* run = runs_.Find(run_id);
    if (run != nullptr && run->InFlight() && run->agent_id == agent.id) ++delivering;
  }
  std::int32_t held = runs_.CountOn(agent.id) - std::min(delivering, agent.capabilities.slots);
  std::int32_t free = agent.capabilities.slots - held;
  // The agent's count also covers runs the coordinator gave up but the agent still
  // runs (CancelStale); ours covers runs assigned since its last report.
  if (agent.free_hint >= 0) free = std::min(free, agent.free_hint);
  return std::max<std::int32_t>(0, free);
}

// A run in flight that a reconnecting agent does not list was lost with its
// previous connection or process: failing it now retries the job without waiting
// for its lease to expire. Except a run not started yet when the same process
// registers again: its Assign may have crossed the Hello, so the agent runs it (its
// RunStarted follows) or refuses it; if the Assign was lost instead, its lease
// expires. Releasing it here assigned the job twice.
void CoordinatorCore::ReleaseUnlisted(const AgentEntry& agent,
                                      const std::vector<std::string>& listed, bool same_process,
                                      Millis now, Effects& out) {
  for (const std::string& run_id : runs_.InFlightOn(agent.id)) {
    if (Contains(listed, run_id)) continue;
    RunEntry* run = runs_.Find(run_id);
    if (same_process && run->state == RunState::kAssigned) {
      Log("agent " + agent.id + " registered again without run " + run_id +
          ", assigned but not started: its Assign may have crossed the Hello; it keeps its lease");
      continue;
    }
    // Otherwise the agent process restarted (Ctrl-C of `orch run` and a resume, a
    // crash, a reboot), or the coordinator did and cannot tell.
    std::string why = same_process ? "agent " + agent.id + " reconnected without run " + run_id
                                   : "agent " + agent.id + " registered without run " + run_id +
                                         ": it ended with the agent's previous process or "
                                         "connection (interrupted, crashed or cut off)";
    RunFailed(*run, RunState::kLost, why, now, out);
  }
}

void CoordinatorCore::OnHeartbeat(const std::string& peer, const protocol::Heartbeat& beat,
                                  Millis now, Effects& out) {
  AgentEntry* agent = agents_.Find(peer);
  // After a coordinator restart the agent is unknown here: the Reject makes it send
  // Hello again, which re-adopts its runs.
  if (agent == nullptr || beat.agent_id != peer) {
    Send(out, peer,
         protocol::Reject{protocol::kProtocolVersion,
                          "agent " + beat.agent_id + " is not registered: send Hello"});
    return;
  }
  agents_.Heard(peer, now);
  // Expire() marks an agent disconnected when it is late; a heartbeat means it was
  // only late. A drained agent stays drained.
  if (agent->state == protocol::AgentState::kDisconnected) {
    agent->state =
        agent->drain_requested ? protocol::AgentState::kDraining : protocol::AgentState::kConnected;
  }
  for (const std::string& run_id : beat.running_runs) {
    RunEntry* run = runs_.Find(run_id);
    if (run != nullptr && run->InFlight() && run->agent_id == peer) {
      runs_.Renew(*run, now + options_.lease);
    }
  }
  // The agent's own count replaces ours, which may have drifted (refusals,
  // results stored since).
  agent->free_hint = beat.free_slots;
  agent->warm_sessions = beat.warm_sessions;
  // Run ids are few per agent (its slots): a sorted copy to look them up.
  std::set<std::string_view> listed(beat.running_runs.begin(), beat.running_runs.end());
  agent->delivering.clear();
  for (const std::string& run_id : runs_.InFlightOn(peer)) {
    const RunEntry* run = runs_.Find(run_id);
    // Only a started run: one assigned after the agent built this heartbeat is not
    // listed yet either.
    if (run->state == store::RunState::kRunning && !listed.contains(run_id)) {
      agent->delivering.insert(run_id);
    }
  }
  CancelStale(*agent, beat.running_runs, out);
  if (AnyPending()) DispatchTo(*agent, now, out);
}

void CoordinatorCore::OnRunStarted(const std::string& peer, const protocol::RunStarted& started,
                                   Millis now, Effects& out) {
  RunEntry* run = runs_.Find(started.run_id);
  if (run != nullptr && !FromItsAgent(*run, peer, "runStarted")) return;
  // A second RunStarted, or one for a run that already ended (lost, cancelled),
  // changes nothing.
  if (run == nullptr || run->state != RunState::kAssigned) {
    Log("ignoring runStarted for run " + started.run_id + ": unknown or not assigned");
    return;
  }
  runs_.Start(*run);
  store::StateChange change;
  change.run = run->ToRecord();
  JobEntry* job = jobs_.Find(run->job_id);
  // The job may have moved on (this run's lease expired, the experiment was
  // cancelled): then only the run's record changes.
  if (job != nullptr && job->current_run == run->id && !job->Terminal()) {
    job->state = JobState::kRunning;
    change.job = job->ToRecord(PlanId(*job));
  }
  change.events.push_back(Event(now, "run.started", run->id, run->agent_id));
  out.push_back(ApplyEffect{std::move(change)});
}

void CoordinatorCore::OnChunk(const std::string& peer, const protocol::DigestChunk& chunk,
                              Millis now, Effects& out) {
  RunEntry* run = runs_.Find(chunk.run_id);
  if (run != nullptr && !FromItsAgent(*run, peer, "digestChunk")) return;
  if (run == nullptr) {
    Log("ignoring digestChunk " + std::to_string(chunk.seq) + " of unknown run " + chunk.run_id);
    return;
  }
  if (AgentEntry* agent = agents_.Find(run->agent_id)) {
    // Feeds the agent's positions-per-second rate shown in StatusReply.
    agent->NotePositions(now, static_cast<std::uint32_t>(chunk.records.size()));
  }
  // Stored even when the run is no longer in flight: a late result is kept under
  // its own run id (see the header).
  AppendChunkEffect effect{chunk.run_id, chunk.seq, {}, peer};
  effect.records.reserve(chunk.records.size());
  for (const protocol::ChunkRecord& record : chunk.records) {
    effect.records.push_back({record.position, record.bytes});
  }
  out.push_back(std::move(effect));
}

void CoordinatorCore::OnFinished(const std::string& peer, const protocol::RunFinished& finished,
                                 Millis now, Effects& out) {
  RunEntry* run = runs_.Find(finished.run_id);
  if (run == nullptr) {
    Log("ignoring runFinished of unknown run " + finished.run_id);
    return;
  }
  if (!FromItsAgent(*run, peer, "runFinished")) return;
  // A failure before RunStarted with no chunks is the agent declining the job (its
  // checks, its model, no slot), not a run of it.
  bool refused = run->state == RunState::kAssigned &&
                 finished.status == protocol::RunStatus::kFailed && finished.chunk_count == 0;
  JobEntry* job = jobs_.Find(run->job_id);
  bool transient = refused && TransientRefusal(finished.summary);
  if (refused) run->refused = true;
  AgentEntry* agent = agents_.Find(run->agent_id);
  if (refused && agent != nullptr && run->InFlight() && agent->free_hint >= 0) {
    // A refused run took no slot; after a transient refusal the agent's count
    // of free slots was not ours: none until its next Heartbeat.
    agent->free_hint = transient ? 0 : agent->free_hint + 1;
  }
  if (transient) {
    Log("agent " + run->agent_id + " could not take run " + run->id + " now: " + finished.error);
  } else if (refused && job != nullptr && !job->RefusedBy(run->agent_id)) {
    job->refusals.push_back({run->agent_id, finished.error});
    Log("agent " + run->agent_id + " refused job " + job->id + ": " + finished.error);
  }
  store::RunOutcome outcome;
  outcome.state = ToRunState(finished.status);
  outcome.error = finished.error;
  if (std::string why = ImplausibleSuccess(*run, finished); !why.empty()) {
    Log("run " + run->id + " from " + peer + ": " + why);
    // Stored as failed so that the job runs again rather than succeeding without
    // usable digests.
    outcome.state = RunState::kFailed;
    outcome.error = why;
  }
  // The run is complete once this many chunks are stored (OnRunStored).
  outcome.chunks_expected = static_cast<std::int64_t>(finished.chunk_count);
  outcome.summary = finished.summary;
  outcome.ended_at_ms = now.count();
  out.push_back(FinishRunEffect{finished.run_id, std::move(outcome), peer});
}

// Called after every write to a run's record (its end, each chunk), so the same
// finished run can arrive here several times while its chunks come in.
Effects CoordinatorCore::OnRunStored(const store::RunRecord& record, Millis now) {
  Effects out;
  RunEntry* run = runs_.Find(record.id);
  if (run == nullptr || !record.finished) return out;
  AgentEntry* agent = agents_.Find(run->agent_id);
  // Counted once per run: a refused run took no slot (OnFinished counted it), and
  // finish_stored marks a run whose slot was already given back.
  if (agent != nullptr && run->InFlight() && !run->refused && !run->finish_stored &&
      agent->free_hint >= 0) {
    agent->free_hint += 1;  // its slot is free again by the agent's count
  }
  JobEntry* job = jobs_.Find(record.job_id);
  bool current = job != nullptr && job->current_run == record.id && !job->Terminal();
  if (!current) {
    if (run->InFlight()) {
      runs_.End(*run, record.state, EndedAt(record, now));
      NoteIfDrained(run->agent_id, now, out);
    }
    return out;  // a late or stray result: stored under its own run id, nothing
                 // more
  }
  if (record.state == RunState::kSucceeded && !record.Complete()) {
    // Chunks are missing (one was refused, e.g. on a full disk): the run keeps
    // a lease while its agent sends them again; if they never come, the lease
    // expires and the job runs again.
    if (run->InFlight() && !run->finish_stored) runs_.Renew(*run, now + options_.lease);
    run->finish_stored = true;
  } else if (record.state == RunState::kSucceeded) {
    if (run->InFlight()) runs_.End(*run, record.state, EndedAt(record, now));
    JobSucceeded(*job, *run, EndedAt(record, now), now, out);
    NoteIfDrained(run->agent_id, now, out);
  } else {
    std::string reason =
        record.error.empty() ? std::string(store::RunStateName(record.state)) : record.error;
    std::optional<std::string> code = DeterministicErrorCode(record.summary);
    // A refused run never ran: it does not spend the job's retry budget.
    if (run->refused && job->current_run == run->id && job->attempts > 0) job->attempts -= 1;
    RunFailed(*run, record.state, "run " + record.id + " on " + record.agent_id + ": " + reason,
              now, out, code ? Retry::kNever : Retry::kWhileBudgetLasts);
    Dispatch(now, out);  // the job may be pending again, for any agent
    return out;
  }
  if (agent != nullptr && AnyPending()) DispatchTo(*agent, now, out);  // its slot only
  return out;
}

Effects CoordinatorCore::Tick(Millis now) {
  Effects out;
  // Agents first, so that the Dispatch below does not give requeued jobs to an
  // agent that has just gone silent.
  for (const std::string& id : agents_.Expire(now)) {
    Log("agent " + id + " is silent; marked disconnected, its runs keep their leases");
    Record(out, now, "agent.departed", id,
           "silent for " + std::to_string(options_.agent_timeout.count() / 1000) +
               " s (timed out); " + std::to_string(runs_.CountOn(id)) +
               " runs in flight keep their leases");
  }
  // Expired() returns a copy: RunFailed releases leases while this loop runs.
  for (const std::string& run_id : runs_.Expired(now)) {
    RunEntry* run = runs_.Find(run_id);
    RunFailed(*run, RunState::kLost,
              "lease of run " + run_id + " on agent " + run->agent_id + " expired", now, out);
  }
  Dispatch(now, out);
  return out;
}

std::optional<Millis> CoordinatorCore::NextDeadline() const {
  std::optional<Millis> leases = runs_.NextExpiry();
  std::optional<Millis> agents = agents_.NextDeadline();
  if (!leases) return agents;
  if (!agents) return leases;
  return std::min(*leases, *agents);
}

// --- helpers ---

void CoordinatorCore::Record(Effects& out, Millis now, std::string kind, std::string subject,
                             std::string detail) const {
  store::StateChange change;
  change.events.push_back(Event(now, std::move(kind), std::move(subject), std::move(detail)));
  out.push_back(ApplyEffect{std::move(change)});
}

void CoordinatorCore::NoteIfDrained(const std::string& agent_id, Millis now, Effects& out) {
  AgentEntry* agent = agents_.Find(agent_id);
  if (agent == nullptr || !agent->drain_requested || agent->drained_noted ||
      runs_.CountOn(agent_id) > 0) {
    return;
  }
  agent->drained_noted = true;
  Log("agent " + agent_id + " is drained: no runs in flight");
  Record(out, now, "agent.drained", agent_id, "no runs in flight");
}

store::EventRecord CoordinatorCore::Event(Millis now, std::string kind, std::string subject,
                                          std::string detail) const {
  store::EventRecord event;
  event.time_ms = now.count();
  event.kind = std::move(kind);
  event.subject = std::move(subject);
  event.detail = std::move(detail);
  return event;
}

const std::string& CoordinatorCore::PlanId(const JobEntry& job) const {
  return catalog_.plan(job.plan).experiment;
}

}  // namespace orch::coordinator
