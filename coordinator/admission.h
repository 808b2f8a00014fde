// Admission: whom the coordinator service listens to, and whose words it keeps. Pure:
// no transport, no store, no clock (time is an input, as in CoordinatorCore); the
// service (coordinator_service.h) asks it and sends what it answers.
//
// What it decides:
// - Bad frames: a peer that sent `max_bad_frames` frames that do not decode is ignored
//   until it connects anew (OnConnected), so a peer that used an absent agent's id
//   cannot lock the agent out.
// - Refusals (coordinator/access_policy.h decides each): counted per key over a
//   sliding window of kRefusalWindow, whatever the key sent between; the
//   `max_bad_frames`-th within it quiets the key for kQuietAfterAbuse on every
//   connection but the one that holds its own agent id. While quieted, each of its
//   requests gets one small answer saying so and until when (no more than it sent, so
//   nothing is amplified); its other messages are dropped. Other keys are not affected.
// - Holders: with authentication, which key holds each routing id's connection now.
//   While its agent is gone, an agent's id may be taken by a connection of another key
//   (protocol/peer_names.h): nothing meant for the agent goes out then (a lost Assign is
//   recovered by its lease).
// - Owners: the key that first submitted an experiment owns it (an edited plan keeps
//   its owner); stored with the plan (PlanRecord::owner), restored from the store. A
//   submitter imports only into the experiments it owns.
// Warnings (a refusal, a key quieted, a bad frame, a message withheld) go to the log
// sink, one line each.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "coordinator/access_policy.h"
#include "coordinator/effects.h"
#include "coordinator/options.h"
#include "protocol/messages.h"
#include "protocol/transport.h"
#include "store/records.h"

namespace orch::coordinator {

inline constexpr Millis kRefusalWindow{60000};
inline constexpr Millis kQuietAfterAbuse{60000};

// The one answer a CLI request waits for, refusing it with `why`: ExportReply for
// `orch export`, CommandReply for the other requests. Nullopt for an agent's messages.
std::optional<protocol::Message> RequestAnswer(const protocol::Message& message, std::string why);

class Admission final {
 public:
  using LogSink = std::function<void(std::string_view line)>;
  // `warn` must outlive the admission (and its copies).
  Admission(std::int32_t max_bad_frames, LogSink warn);

  // Plain mode until set.
  void SetPolicy(AccessPolicy policy) { policy_ = std::move(policy); }
  const AccessPolicy& policy() const { return policy_; }

  // A new connection under `peer`: the abuse of an earlier one (who may have used the
  // id while its owner was away) does not carry over.
  void OnConnected(const std::string& peer);
  // `user`'s connection holds `peer` now (with authentication; a no-op without).
  void NoteHolder(const std::string& peer, const std::string& user);

  // Whether a frame is dropped before it is handled: its peer is ignored, or its key is
  // quieted on this connection. A quieted key's request comes with its answer.
  struct Screened {
    bool drop = false;
    std::optional<protocol::Message> answer;
  };
  Screened Screen(const protocol::TransportEvent& event, Millis now) const;

  // Counts a frame of `peer` that did not decode; the peer is ignored from the
  // max_bad_frames-th on.
  void BadFrame(const std::string& peer, const Status& why);
  bool ignoring(const std::string& peer) const { return ignored_.contains(peer); }

  // Nullopt when the policy permits `message` from `event`'s key and connection; else
  // the one answer to send (the refusal is counted, and may quiet the key).
  // `has_experiment`: whether the coordinator holds an experiment of that name.
  std::optional<protocol::Message> Refusal(
      const protocol::TransportEvent& event, const protocol::Message& message,
      const std::function<bool(const std::string&)>& has_experiment, Millis now);

  // Sets each PutPlanEffect's owner: its first submitter, else `user`.
  void StampOwner(const std::string& user, Effects& effects) const;
  // A plan was stored (first submitter wins).
  void NoteOwner(const store::PlanRecord& plan);
  void RestoreOwners(const store::StoreState& state);
  // Which experiments `user` may import into: null when any (plain mode, an admin).
  std::function<bool(const std::string& experiment)> ImportScope(const std::string& user) const;

  // True (and logged) when a message for `peer` must not go out: an agent's id held by
  // a connection of another key. Refusals always go out, to whoever holds the id.
  bool Withheld(const std::string& peer, const protocol::Message& message) const;

 private:
  bool OwnAgentConnection(const protocol::TransportEvent& event) const;

  std::int32_t max_bad_frames_;
  LogSink warn_;
  AccessPolicy policy_;
  std::map<std::string, std::int32_t> bad_by_peer_;
  std::set<std::string> ignored_;
  // key -> when its refusals within kRefusalWindow came, oldest first
  std::map<std::string, std::deque<Millis>> refused_by_;
  struct Quieted {
    Millis until{0};
    std::size_t refusals = 0;  // that quieted it
  };
  std::map<std::string, Quieted> quiet_until_;  // key -> ignored until then
  std::map<std::string, std::string> holder_;   // peer id -> key of its connection
  std::map<std::string, std::string> owners_;   // experiment -> submitting key (stored)
};

}  // namespace orch::coordinator
