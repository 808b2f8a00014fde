#include "coordinator/coordinator_service.h"

#include <new>
#include <utility>

#include "protocol/codec.h"

namespace orch::coordinator {

CoordinatorService::CoordinatorService(CoordinatorOptions options, store::Store& store, Sender send,
                                       spdlog::logger& log)
    : state_{.core = CoordinatorCore(
                 options, [&log](std::string_view line) { log.info(fmt::runtime("{}"), line); }),
             .admission =
                 Admission(options.max_bad_frames,
                           [&log](std::string_view line) { log.warn(fmt::runtime("{}"), line); }),
             .uploads = {},
             .bundle_keys = {},
             .counters = {},
             .group_commit = options.group_commit,
             .outbox = {}},
      store_(&store),
      send_(std::move(send)),
      log_(log) {}

CoordinatorService::CoordinatorService(const CoordinatorService& state, store::Store& store,
                                       Sender send)
    : state_(state.state_), store_(&store), send_(std::move(send)), log_(state.log_) {}

Status CoordinatorService::Start(Millis now) {
  Result<store::StoreState> state = store_->LoadState();
  if (!state.ok()) return state.status().WithContext("load coordinator state");
  log_.info(fmt::runtime("restored {} plans, {} jobs, {} runs from the store"), state->plans.size(),
            state->jobs.size(), state->runs.size());
  state_.admission.RestoreOwners(*state);
  Perform(state_.core.Restore(*state, now), now);
  return Status::Ok();
}

void CoordinatorService::OnEvent(const protocol::TransportEvent& event, Millis now) {
  using Kind = protocol::TransportEvent::Kind;
  // A rebuild after a failed write could not read the store: retry it before the
  // core decides anything from a memory the store may not match.
  if (state_.needs_resync) Resync(now);
  if (event.kind != Kind::kDisconnected) state_.admission.NoteHolder(event.peer, event.user);
  switch (event.kind) {
    case Kind::kConnected:
      // A new connection under this id: the abuse of an earlier one (who may
      // have used the id while its owner was away) does not carry over.
      log_.debug(fmt::runtime("peer {} connected"), event.peer);
      state_.admission.OnConnected(event.peer);
      break;
    case Kind::kDisconnected:
      Perform(state_.core.OnDisconnected(event.peer, now), now);
      break;
    case Kind::kFrame:
      OnFrame(event, now);
      break;
    case Kind::kRefused:
      break;  // a client's event; a server has none
  }
}

void CoordinatorService::Tick(Millis now) {
  if (state_.needs_resync) Resync(now);
  Perform(state_.core.Tick(now), now);
}

void CoordinatorService::OnFrame(const protocol::TransportEvent& event, Millis now) {
  const std::string& peer = event.peer;
  Admission::Screened screened = state_.admission.Screen(event, now);
  if (screened.drop) {
    ++state_.bad_frames;
    if (screened.answer) SendMessage(peer, *screened.answer);
    return;
  }
  Result<protocol::Message> message = protocol::Decode(event.frame);
  if (!message.ok()) return OnUndecodable(peer, message.status());
  std::string name(protocol::MessageName(*message));
  try {
    OnMessage(event, std::move(*message), now);
  } catch (const std::bad_alloc&) {
    // Whatever the request asked for did not fit in memory: it is refused, the
    // coordinator goes on, and its core is rebuilt from the store in case the handler
    // stopped half way.
    ++state_.out_of_memory;
    log_.error(fmt::runtime("out of memory handling {} from {} ({} bytes); refused it"), name, peer,
               event.frame.size());
    state_.needs_resync = true;
    // A moved-from message still holds its alternative: RequestAnswer looks only at that.
    std::optional<protocol::Message> answer =
        RequestAnswer(*message, "the coordinator ran out of memory handling this " + name +
                                    "; nothing of it was stored");
    SendMessage(peer, answer.value_or(protocol::Reject{protocol::kProtocolVersion,
                                                       "the coordinator ran out of memory"}));
  }
}

void CoordinatorService::OnMessage(const protocol::TransportEvent& event, protocol::Message message,
                                   Millis now) {
  if (!Permitted(event, message, now)) return;
  if (!WholePlan(event, message, now)) return;  // a plan in parts: until its last part
  // Bundles need the store and the keys, which the pure core has neither of.
  if (const auto* request = std::get_if<protocol::ExportRequest>(&message)) {
    OnExport(event, *request, now);
    return;
  }
  if (const auto* request = std::get_if<protocol::ImportRequest>(&message)) {
    OnImport(event, *request, now);
    return;
  }
  Effects effects = state_.core.OnMessage(event.peer, std::move(message), now);
  if (state_.admission.policy().authenticated) state_.admission.StampOwner(event.user, effects);
  Perform(std::move(effects), now);
}

void CoordinatorService::OnUndecodable(const std::string& peer, const Status& why) {
  if (why.code() == StatusCode::kFailedPrecondition) {
    // Another protocol version: the decoder's message names both.
    log_.warn(fmt::runtime("rejecting {}: {}"), peer, why.message());
    SendMessage(peer, protocol::Reject{protocol::kProtocolVersion, why.message()});
    return;
  }
  ++state_.bad_frames;
  state_.admission.BadFrame(peer, why);
}

bool CoordinatorService::Permitted(const protocol::TransportEvent& event,
                                   const protocol::Message& message, Millis now) {
  std::optional<protocol::Message> refusal = state_.admission.Refusal(
      event, message,
      [this](const std::string& experiment) { return state_.core.HasExperiment(experiment); }, now);
  if (!refusal) return true;
  ++state_.counters.refusals;
  SendMessage(event.peer, *refusal);
  return false;
}

void CoordinatorService::Perform(Effects effects, Millis now) {
  for (Effect& effect : effects) {
    if (!PerformOne(effect, now)) return;  // nothing after a failed write happens
  }
}

bool CoordinatorService::PerformOne(Effect& effect, Millis now) {
  if (auto* send = std::get_if<SendEffect>(&effect)) {
    SendMessage(send->peer, send->message);
    return true;
  }
  state_.unsynced = true;  // every other effect writes to the store
  // A failed plan or state write leaves the core's memory ahead of the store:
  // rebuild it from the store.
  if (auto* put = std::get_if<PutPlanEffect>(&effect)) {
    if (Put(*put)) return true;
    Resync(now);
    return false;
  }
  if (auto* apply = std::get_if<ApplyEffect>(&effect)) {
    Status status = store_->Apply(apply->change);
    if (status.ok()) {
      for (const store::EventRecord& event : apply->change.events)
        ++state_.counters.events[event.kind];
      const std::optional<store::RunRecord>& run = apply->change.run;
      if (run && run->state == store::RunState::kLost) ++state_.counters.runs_lost;
      return true;
    }
    ++state_.failed_writes;
    log_.error(fmt::runtime("store write failed: {}"), status.ToString());
    Resync(now);
    return false;
  }
  // The core decides on a chunk or a run's end only once it is stored
  // (OnRunStored), so a failed write there needs no rebuild: unacknowledged, the
  // agent sends it again.
  if (auto* chunk = std::get_if<AppendChunkEffect>(&effect)) return Append(*chunk, now);
  // A fingerprint only describes a host: a failed write is logged and the effects
  // after it still happen (effects.h).
  if (auto* fingerprint = std::get_if<PutFingerprintEffect>(&effect)) {
    Result<store::WriteOutcome> stored = store_->PutFingerprint(fingerprint->id, fingerprint->json);
    if (!stored.ok()) {
      log_.warn(fmt::runtime("store fingerprint {}: {}"), fingerprint->id,
                stored.status().ToString());
    }
    return true;
  }
  return Finish(std::get<FinishRunEffect>(effect), now);
}

bool CoordinatorService::Put(PutPlanEffect& effect) {
  Result<int> inserted = effect.replace ? store_->ReplacePlan(effect.plan, effect.jobs)
                                        : store_->PutPlan(effect.plan, effect.jobs);
  if (!inserted.ok()) {
    ++state_.failed_writes;
    log_.error(fmt::runtime("store plan {}: {}"), effect.plan.experiment,
               inserted.status().ToString());
    SendMessage(effect.peer,
                protocol::CommandReply{false, "submit failed: " + inserted.status().message()});
    return false;
  }
  log_.info(fmt::runtime("{} ({} new jobs stored)"), effect.ok_message, *inserted);
  state_.admission.NoteOwner(effect.plan);
  SendMessage(effect.peer, protocol::CommandReply{true, effect.ok_message});
  return true;
}

bool CoordinatorService::Append(AppendChunkEffect& effect, Millis now) {
  store::RunRecord run;
  Result<store::WriteOutcome> stored =
      store_->AppendChunk(effect.run_id, effect.seq, effect.records, &run);
  if (!stored.ok()) {
    ++state_.failed_writes;
    log_.error(fmt::runtime("chunk {} of run {} not stored, not acknowledged: {}"), effect.seq,
               effect.run_id, stored.status().ToString());
    return false;
  }
  if (!effect.peer.empty()) SendMessage(effect.peer, protocol::Ack{effect.run_id, effect.seq});
  if (*stored == store::WriteOutcome::kStored) {
    state_.counters.records_by_agent[run.agent_id] += effect.records.size();
    ++state_.counters.chunks_by_agent[run.agent_id];
  }
  AfterRunWrite(run, now);
  return true;
}

bool CoordinatorService::Finish(FinishRunEffect& effect, Millis now) {
  store::RunRecord run;
  Result<store::WriteOutcome> stored =
      store_->FinishRun(effect.run_id, effect.outcome, std::nullopt, &run);
  if (!stored.ok()) {
    ++state_.failed_writes;
    log_.error(fmt::runtime("end of run {} not stored, not acknowledged: {}"), effect.run_id,
               stored.status().ToString());
    return false;
  }
  if (!effect.peer.empty()) {
    SendMessage(effect.peer, protocol::Ack{effect.run_id, protocol::kRunFinishedSeq});
  }
  if (*stored == store::WriteOutcome::kStored && run.assigned_at_ms > 0 &&
      run.ended_at_ms >= run.assigned_at_ms) {
    state_.counters.run_seconds.Observe(static_cast<double>(run.ended_at_ms - run.assigned_at_ms) /
                                        1000.0);
  }
  AfterRunWrite(run, now);
  return true;
}

void CoordinatorService::AfterRunWrite(const store::RunRecord& run, Millis now) {
  // The core decides on the stored record (chunks received so far, whether it is
  // complete), not on what this one write carried. The store hands it back from the
  // write itself: reading it back cost a lookup in every table level per message.
  Perform(state_.core.OnRunStored(run, now), now);
}

void CoordinatorService::SendMessage(const std::string& peer, const protocol::Message& message) {
  if (std::holds_alternative<protocol::Reject>(message)) ++state_.counters.rejects;
  if (state_.admission.Withheld(peer, message)) return;
  if (state_.group_commit) {
    state_.outbox.push_back({peer, message});
    return;
  }
  Deliver(peer, message);
}

void CoordinatorService::Deliver(const std::string& peer, const protocol::Message& message) {
  Status sent = send_(peer, protocol::Encode(message));
  if (!sent.ok()) {
    log_.warn(fmt::runtime("{} to {} not sent: {}"), protocol::MessageName(message), peer,
              sent.ToString());
  }
}

void CoordinatorService::Commit() {
  if (!state_.group_commit) return;  // every write was synced and every message sent already
  Status synced = Status::Ok();
  if (state_.unsynced) {
    state_.unsynced = false;
    synced = store_->Sync();
  }
  std::vector<Outgoing> out;
  out.swap(state_.outbox);
  if (!synced.ok()) {
    ++state_.failed_writes;
    log_.error(fmt::runtime("store sync failed; the acknowledgements of this burst are "
                            "withheld: {}"),
               synced.ToString());
  }
  for (Outgoing& o : out) {
    if (!synced.ok()) {
      if (std::holds_alternative<protocol::Ack>(o.message)) continue;
      if (auto* reply = std::get_if<protocol::CommandReply>(&o.message); reply && reply->ok) {
        o.message = protocol::CommandReply{false, "not stored durably: " + synced.message()};
      }
    }
    Deliver(o.peer, o.message);
  }
}

void CoordinatorService::Resync(Millis now) {
  // Restore's effects are performed below; a write among them that fails calls
  // Resync again. Rather than recurse, the next event or Tick retries.
  if (state_.resyncing) {
    state_.needs_resync = true;  // the store still fails: try again on the next event
    return;
  }
  state_.resyncing = true;
  Result<store::StoreState> state = store_->LoadState();
  if (state.ok()) {
    state_.needs_resync = false;
    log_.warn(fmt::runtime("rebuilt coordinator state from the store after a failed write"));
    state_.admission.RestoreOwners(*state);
    Perform(state_.core.Restore(*state, now), now);
  } else {
    state_.needs_resync = true;
    log_.error(fmt::runtime("reload state: {}"), state.status().ToString());
  }
  state_.resyncing = false;
}

}  // namespace orch::coordinator
