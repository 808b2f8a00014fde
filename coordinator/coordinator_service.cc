#include "coordinator/coordinator_service.h"

#include <algorithm>
#include <ctime>
#include <new>
#include <utility>

#include "protocol/codec.h"

namespace orch::coordinator {

CoordinatorService::CoordinatorService(CoordinatorOptions options, store::Store& store, Sender send,
                                       spdlog::logger& log)
    : core_(options, [&log](std::string_view line) { log.info(fmt::runtime("{}"), line); }),
      store_(&store),
      send_(std::move(send)),
      log_(log),
      max_bad_frames_(options.max_bad_frames),
      group_commit_(options.group_commit) {}

CoordinatorService::CoordinatorService(const CoordinatorService& state, store::Store& store,
                                       Sender send)
    : CoordinatorService(state) {
  store_ = &store;
  send_ = std::move(send);
}

Status CoordinatorService::Start(Millis now) {
  Result<store::StoreState> state = store_->LoadState();
  if (!state.ok()) return state.status().WithContext("load coordinator state");
  log_.info(fmt::runtime("restored {} plans, {} jobs, {} runs from the store"), state->plans.size(),
            state->jobs.size(), state->runs.size());
  RestoreOwners(*state);
  Perform(core_.Restore(*state, now), now);
  return Status::Ok();
}

void CoordinatorService::OnEvent(const protocol::TransportEvent& event, Millis now) {
  using Kind = protocol::TransportEvent::Kind;
  // A rebuild after a failed write could not read the store: retry it before the
  // core decides anything from a memory the store may not match.
  if (needs_resync_) Resync(now);
  if (policy_.authenticated && event.kind != Kind::kDisconnected) {
    holder_[event.peer] = event.user;  // who holds this routing id's connection now
  }
  switch (event.kind) {
    case Kind::kConnected:
      // A new connection under this id: the abuse of an earlier one (who may
      // have used the id while its owner was away) does not carry over.
      log_.debug(fmt::runtime("peer {} connected"), event.peer);
      bad_by_peer_.erase(event.peer);
      ignored_.erase(event.peer);
      break;
    case Kind::kDisconnected:
      Perform(core_.OnDisconnected(event.peer, now), now);
      break;
    case Kind::kFrame:
      OnFrame(event, now);
      break;
    case Kind::kRefused:
      break;  // a client's event; a server has none
  }
}

void CoordinatorService::Tick(Millis now) {
  if (needs_resync_) Resync(now);
  Perform(core_.Tick(now), now);
}

namespace {

// The answer a CLI request waits for: ExportReply for `orch export`, CommandReply for
// the others. Nullopt for an agent's messages.
std::optional<protocol::Message> RequestAnswer(const protocol::Message& message, std::string why) {
  if (std::holds_alternative<protocol::ExportRequest>(message)) {
    return protocol::ExportReply{false, std::move(why), ""};
  }
  bool request = std::holds_alternative<protocol::ImportRequest>(message) ||
                 std::holds_alternative<protocol::Submit>(message) ||
                 std::holds_alternative<protocol::StatusRequest>(message) ||
                 std::holds_alternative<protocol::CancelExperiment>(message) ||
                 std::holds_alternative<protocol::Retry>(message) ||
                 std::holds_alternative<protocol::Drain>(message);
  if (!request) return std::nullopt;
  return protocol::CommandReply{false, std::move(why)};
}

// "2025-03-01 12:00:05 UTC" for a wall-clock time in ms since the Unix epoch.
std::string UtcTime(Millis at) {
  std::time_t seconds = static_cast<std::time_t>(at.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

}  // namespace

void CoordinatorService::OnFrame(const protocol::TransportEvent& event, Millis now) {
  const std::string& peer = event.peer;
  if (ignored_.contains(peer) || Quiet(event, now)) {
    ++bad_frames_;
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
    ++out_of_memory_;
    log_.error(fmt::runtime("out of memory handling {} from {} ({} bytes); refused it"), name, peer,
               event.frame.size());
    needs_resync_ = true;
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
  const std::string& peer = event.peer;
  {
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
    Effects effects = core_.OnMessage(peer, std::move(message), now);
    if (policy_.authenticated) StampOwner(event.user, effects);
    Perform(std::move(effects), now);
  }
}

void CoordinatorService::OnUndecodable(const std::string& peer, const Status& why) {
  if (why.code() == StatusCode::kFailedPrecondition) {
    // Another protocol version: the decoder's message names both.
    log_.warn(fmt::runtime("rejecting {}: {}"), peer, why.message());
    SendMessage(peer, protocol::Reject{protocol::kProtocolVersion, why.message()});
    return;
  }
  BadFrame(peer, why);
}

// A key whose requests were refused too often is ignored for a while, on every
// connection but the one that holds its own agent id (the id's legitimate
// holder is not locked out by another connection using its key). Each of its
// requests still gets one small answer saying so: no more than it sent, so nothing
// is amplified, and the person behind the key learns why and until when.
bool CoordinatorService::Quiet(const protocol::TransportEvent& event, Millis now) {
  auto quiet = quiet_until_.find(event.user);
  if (quiet == quiet_until_.end() || now >= quiet->second.until) return false;
  auto role = policy_.roles.find(event.user);
  bool own_agent =
      role != policy_.roles.end() && protocol::SpeaksAs(role->second, event.user, event.peer);
  if (own_agent) return false;
  Result<protocol::Message> message = protocol::Decode(event.frame);
  if (!message.ok()) return true;
  Millis left = quiet->second.until - now;
  std::optional<protocol::Message> answer = RequestAnswer(
      *message, "throttled: " + std::to_string(quiet->second.refusals) +
                    " refused requests from key " + event.user + " within " +
                    std::to_string(kRefusalWindow.count() / 1000) +
                    " s; its requests are ignored until " + UtcTime(quiet->second.until) + " (in " +
                    std::to_string((left.count() + 999) / 1000) + " s)");
  if (answer) SendMessage(event.peer, *answer);
  return true;
}

bool CoordinatorService::Permitted(const protocol::TransportEvent& event,
                                   const protocol::Message& message, Millis now) {
  auto owner_of = [this](const std::string& experiment) -> std::optional<std::string> {
    if (!core_.HasExperiment(experiment)) return std::nullopt;
    auto it = owners_.find(experiment);
    return it == owners_.end() ? std::string() : it->second;
  };
  std::string refusal = WhyRefused(policy_, event.user, event.peer, message, owner_of);
  if (refusal.empty()) return true;
  // Refusals count within a sliding window, whatever the key sent between: an agent's
  // key whose heartbeats are permitted is still quieted for refused requests.
  ++counters_.refusals;
  std::deque<Millis>& refused = refused_by_[event.user];
  refused.push_back(now);
  while (now - refused.front() >= kRefusalWindow) refused.pop_front();
  std::size_t count = refused.size();
  log_.warn(fmt::runtime("refused {} from {} ({} within {} s): {}"), protocol::MessageName(message),
            event.peer, count, kRefusalWindow.count() / 1000, refusal);
  // `orch export` waits for an ExportReply, other CLI requests for a CommandReply; an
  // agent's message gets a Reject. Exactly one answer each.
  std::optional<protocol::Message> answer = RequestAnswer(message, "refused: " + refusal);
  SendMessage(event.peer,
              answer.value_or(protocol::Reject{protocol::kProtocolVersion, "refused: " + refusal}));
  if (count >= static_cast<std::size_t>(max_bad_frames_)) {
    quiet_until_[event.user] = {now + kQuietAfterAbuse, count};
    refused_by_.erase(event.user);
    log_.warn(fmt::runtime("ignoring key {} for {} s: {} refused requests within {} s"), event.user,
              kQuietAfterAbuse.count() / 1000, count, kRefusalWindow.count() / 1000);
  }
  return false;
}

// The key that first submitted an experiment owns it: an edited plan keeps
// its owner. Stored with the plan, so it survives restarts.
void CoordinatorService::StampOwner(const std::string& user, Effects& effects) const {
  for (Effect& effect : effects) {
    auto* put = std::get_if<PutPlanEffect>(&effect);
    if (put == nullptr) continue;
    auto owner = owners_.find(put->plan.id);
    put->plan.owner = owner == owners_.end() ? user : owner->second;
  }
}

void CoordinatorService::RestoreOwners(const store::StoreState& state) {
  owners_.clear();
  for (const store::PlanRecord& plan : state.plans) {
    // Plans stored in plain mode have no owner.
    if (!plan.owner.empty()) owners_[plan.id] = plan.owner;
  }
}

void CoordinatorService::BadFrame(const std::string& peer, const Status& why) {
  ++bad_frames_;
  std::int32_t count = ++bad_by_peer_[peer];
  log_.warn(fmt::runtime("dropping a bad frame from {} ({} so far): {}"), peer, count,
            why.ToString());
  if (count >= max_bad_frames_) {
    ignored_.insert(peer);
    log_.warn(fmt::runtime("ignoring {} from now on: {} bad frames"), peer, count);
  }
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
  unsynced_ = true;  // every other effect writes to the store
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
      for (const store::EventRecord& event : apply->change.events) ++counters_.events[event.kind];
      const std::optional<store::RunRecord>& run = apply->change.run;
      if (run && run->state == store::RunState::kLost) ++counters_.runs_lost;
      return true;
    }
    ++failed_writes_;
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
    ++failed_writes_;
    log_.error(fmt::runtime("store plan {}: {}"), effect.plan.id, inserted.status().ToString());
    SendMessage(effect.peer,
                protocol::CommandReply{false, "submit failed: " + inserted.status().message()});
    return false;
  }
  log_.info(fmt::runtime("{} ({} new jobs stored)"), effect.ok_message, *inserted);
  // try_emplace: the first submitter stays the owner.
  if (!effect.plan.owner.empty()) owners_.try_emplace(effect.plan.id, effect.plan.owner);
  SendMessage(effect.peer, protocol::CommandReply{true, effect.ok_message});
  return true;
}

bool CoordinatorService::Append(AppendChunkEffect& effect, Millis now) {
  store::RunRecord run;
  Result<store::WriteOutcome> stored =
      store_->AppendChunk(effect.run_id, effect.seq, effect.records, &run);
  if (!stored.ok()) {
    ++failed_writes_;
    log_.error(fmt::runtime("chunk {} of run {} not stored, not acknowledged: {}"), effect.seq,
               effect.run_id, stored.status().ToString());
    return false;
  }
  if (!effect.peer.empty()) SendMessage(effect.peer, protocol::Ack{effect.run_id, effect.seq});
  if (*stored == store::WriteOutcome::kStored) {
    counters_.records_by_agent[run.agent_id] += effect.records.size();
    ++counters_.chunks_by_agent[run.agent_id];
  }
  AfterRunWrite(run, now);
  return true;
}

bool CoordinatorService::Finish(FinishRunEffect& effect, Millis now) {
  store::RunRecord run;
  Result<store::WriteOutcome> stored =
      store_->FinishRun(effect.run_id, effect.outcome, std::nullopt, &run);
  if (!stored.ok()) {
    ++failed_writes_;
    log_.error(fmt::runtime("end of run {} not stored, not acknowledged: {}"), effect.run_id,
               stored.status().ToString());
    return false;
  }
  if (!effect.peer.empty()) {
    SendMessage(effect.peer, protocol::Ack{effect.run_id, protocol::kRunFinishedSeq});
  }
  if (*stored == store::WriteOutcome::kStored && run.assigned_at_ms > 0 &&
      run.ended_at_ms >= run.assigned_at_ms) {
    counters_.run_seconds.Observe(static_cast<double>(run.ended_at_ms - run.assigned_at_ms) /
                                  1000.0);
  }
  AfterRunWrite(run, now);
  return true;
}

void CoordinatorService::AfterRunWrite(const store::RunRecord& run, Millis now) {
  // The core decides on the stored record (chunks received so far, whether it is
  // complete), not on what this one write carried. The store hands it back from the
  // write itself: reading it back cost a lookup in every table level per message.
  Perform(core_.OnRunStored(run, now), now);
}

void CoordinatorService::SendMessage(const std::string& peer, const protocol::Message& message) {
  // While its agent is gone, an agent's id may be taken by a connection of
  // another key (protocol/peer_names.h): nothing meant for the agent goes out
  // then (a lost Assign is recovered by its lease).
  auto holder = holder_.find(peer);
  bool refusal = std::holds_alternative<protocol::Reject>(message);  // for that connection
  if (refusal) ++counters_.rejects;
  bool agents_id = false;  // some agent key may speak as `peer`
  for (const auto& [name, role] : policy_.roles) {
    if (protocol::SpeaksAs(role, name, peer)) agents_id = true;
  }
  auto holder_role =
      holder == holder_.end() ? policy_.roles.end() : policy_.roles.find(holder->second);
  bool held_by_its_key = holder_role != policy_.roles.end() &&
                         protocol::SpeaksAs(holder_role->second, holder->second, peer);
  if (policy_.authenticated && !refusal && agents_id && holder != holder_.end() &&
      !held_by_its_key) {
    log_.warn(fmt::runtime("{} for agent {} not sent: its id is held by key {}"),
              protocol::MessageName(message), peer, holder->second);
    return;
  }
  if (group_commit_) {
    outbox_.push_back({peer, message});
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
  if (!group_commit_) return;  // every write was synced and every message sent already
  Status synced = Status::Ok();
  if (unsynced_) {
    unsynced_ = false;
    synced = store_->Sync();
  }
  std::vector<Outgoing> out;
  out.swap(outbox_);
  if (!synced.ok()) {
    ++failed_writes_;
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
  if (resyncing_) {
    needs_resync_ = true;  // the store still fails: try again on the next event
    return;
  }
  resyncing_ = true;
  Result<store::StoreState> state = store_->LoadState();
  if (state.ok()) {
    needs_resync_ = false;
    log_.warn(fmt::runtime("rebuilt coordinator state from the store after a failed write"));
    RestoreOwners(*state);
    Perform(core_.Restore(*state, now), now);
  } else {
    needs_resync_ = true;
    log_.error(fmt::runtime("reload state: {}"), state.status().ToString());
  }
  resyncing_ = false;
}

}  // namespace orch::coordinator
