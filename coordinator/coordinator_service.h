// CoordinatorService: the shell around CoordinatorCore. It decodes frames,
// feeds the core, and performs the core's effects against the Store and the
// network, in order (coordinator/effects.h). It knows nothing of event loops:
// CoordinatorDaemon drives it on Boost.Asio; tests drive it with a
// MemoryNetwork and a fake clock.
//
// Guarantees:
// - An Ack{run, seq} is sent only after the store returned OK for that chunk (or found it
//   already stored); a RunFinished is acknowledged with seq kRunFinishedSeq
//   likewise.
// - A failed store write sends nothing that depended on it, leaves the store as it was
//   (store contract), is logged, and the core is rebuilt from the store; the
//   service keeps running. A Submit whose write failed is answered
//   CommandReply{ok = false}.
// - Bad input: frames that do not decode are counted and logged and dropped; a peer that
//   sends `max_bad_frames` of them is ignored until it connects anew (the
//   transport reports each new connection), so a peer that used an absent
//   agent's id cannot lock the agent out. A Hello of another
//   protocol version is answered with Reject naming both versions.
// - With authentication (SetAccessPolicy): coordinator/access_policy.h decides;
//   refusals are answered and counted per key, and a key refused
//   `max_bad_frames` times within kRefusalWindow (whatever it sent between) is
//   ignored for kQuietAfterAbuse except on the connection that holds its own agent
//   id. While ignored, each of its requests is answered once, saying it is
//   throttled and until when; its other messages are dropped. Who submitted an
//   experiment is stored with its plan (PlanRecord::owner).
// - A plan larger than a frame arrives as Submit parts (upload_id), assembled as a
//   result bundle's parts are (below) and then submitted whole; the access policy
//   checks the whole plan again (its experiment).
// - Bundles (docs/bundles.md): an ExportRequest is answered with a plan bundle signed
//   with the coordinator's key (BundleKeys), an ImportRequest by verifying the result
//   bundle and storing it in one write (bundle/result_bundle.h); the core is then
//   rebuilt from the store, so jobs the bundle completed are not handed out. A
//   submitter may import only into the experiments it submitted.
// Not thread-safe: one thread (the event loop) calls everything.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bundle/bundle_file.h"
#include "coordinator/access_policy.h"
#include "coordinator/coordinator_core.h"
#include "coordinator/service_counters.h"
#include "protocol/identity_key.h"
#include "protocol/transport.h"
#include "store/store.h"

namespace orch::coordinator {

// A key's refusals are counted over a sliding window of this length: max_bad_frames
// of them within it, whatever else the key sent between (its agent's heartbeats),
// and the key is ignored for kQuietAfterAbuse (other keys are not affected).
inline constexpr Millis kRefusalWindow{60000};
inline constexpr Millis kQuietAfterAbuse{60000};

// Files sent in parts are assembled in memory, each kind with its bounds: result
// bundles (ImportRequest.upload_id) at most kMaxUploadBytes each and kMaxUploads at
// once, plans (Submit.upload_id) at most kMaxPlanBytes of JSON each and
// kMaxPlanUploads at once. An upload is dropped when no part came for kUploadIdle.
inline constexpr std::uint64_t kMaxUploadBytes = std::uint64_t{256} << 20;
inline constexpr std::size_t kMaxUploads = 4;
inline constexpr std::uint64_t kMaxPlanBytes = std::uint64_t{512} << 20;
inline constexpr std::size_t kMaxPlanUploads = 2;
inline constexpr Millis kUploadIdle{60000};

// What bundles need: the coordinator's own key (signs plan bundles; the plan bundle a
// result bundle answers must carry its signature) and the folder of the keys it admits,
// whose `contributor` keys are trusted to sign result bundles (read at each import, so
// a key added there is trusted without a restart).
struct BundleKeys {
  std::optional<protocol::SecretIdentity> own;  // none: plain mode, bundles refused
  std::string allowed_dir;
  // What one result bundle may inflate to (coordinator config max_bundle_bytes).
  std::uint64_t max_bundle_bytes = bundle::kDefaultMaxBundleBytes;
};

class CoordinatorService final {
 public:
  // Sends one frame to a peer (a Transport::Send, or ZmqAsioDriver::Send on a
  // loop).
  using Sender = std::function<Status(std::string_view peer, std::string_view frame)>;

  // Borrows `store` and `log`, which must outlive the service.
  CoordinatorService(CoordinatorOptions options, store::Store& store, Sender send,
                     spdlog::logger& log);

  // A service in the state `state` is in now, over `store` and sending through
  // `send`; `store` must hold what `state`'s store holds (a copy of its memory
  // tables, say). Lets the fuzz targets start every input from one set-up without
  // repeating it. Not for a running coordinator: one store has one service.
  CoordinatorService(const CoordinatorService& state, store::Store& store, Sender send);

  // Rebuilds the core from the store (restart). Errors when the store cannot be
  // read.
  Status Start(Millis now);
  // Who may say what (coordinator/access_policy.h); plain mode until set. Call
  // before the first event.
  void SetAccessPolicy(AccessPolicy policy) { policy_ = std::move(policy); }
  void SetBundleKeys(BundleKeys keys) { bundle_keys_ = std::move(keys); }

  void OnEvent(const protocol::TransportEvent& event, Millis now);
  void Tick(Millis now);
  // With options.group_commit: syncs the store once if anything was written since the
  // last commit, then sends every message held since. When the sync fails, the Acks
  // and positive CommandReplies among them are not sent (the writes they confirm may
  // not be durable; agents resend, and what is stored by then is acknowledged as a
  // duplicate); a CommandReply says the write failed instead. Without group commit
  // there is nothing to do. The shell calls it after each burst of events and tick.
  void Commit();
  std::optional<Millis> NextDeadline() const { return core_.NextDeadline(); }

  const CoordinatorCore& core() const { return core_; }
  std::uint64_t bad_frames() const { return bad_frames_; }
  std::uint64_t failed_writes() const { return failed_writes_; }
  // Requests refused because handling them ran out of memory.
  std::uint64_t out_of_memory() const { return out_of_memory_; }
  bool ignoring(const std::string& peer) const { return ignored_.contains(peer); }
  // What it counted since it started (service_counters.h).
  const ServiceCounters& counters() const { return counters_; }

 private:
  void OnFrame(const protocol::TransportEvent& event, Millis now);
  void OnMessage(const protocol::TransportEvent& event, protocol::Message message, Millis now);
  void OnUndecodable(const std::string& peer, const Status& why);
  // False (after answering the peer) when the policy refuses the message.
  bool Permitted(const protocol::TransportEvent& event, const protocol::Message& message,
                 Millis now);
  // True when the event's key is ignored on this connection now; its request, if
  // it is one, has been answered that it is throttled.
  bool Quiet(const protocol::TransportEvent& event, Millis now);
  // False when `message` is a part of a plan and the plan is not whole yet, or the
  // whole plan is refused (the peer has been answered); else true, with a plan sent in
  // parts put back together in `message`.
  bool WholePlan(const protocol::TransportEvent& event, protocol::Message& message, Millis now);
  void StampOwner(const std::string& user, Effects& effects) const;
  void RestoreOwners(const store::StoreState& state);
  void BadFrame(const std::string& peer, const Status& why);
  void Perform(Effects effects, Millis now);
  // Performs one effect; false when it was a store write that failed.
  bool PerformOne(Effect& effect, Millis now);
  bool Put(PutPlanEffect& effect);
  bool Append(AppendChunkEffect& effect, Millis now);
  bool Finish(FinishRunEffect& effect, Millis now);
  void AfterRunWrite(const store::RunRecord& run, Millis now);
  // Sends, or holds until Commit() under group commit.
  void SendMessage(const std::string& peer, const protocol::Message& message);
  void Deliver(const std::string& peer, const protocol::Message& message);
  void Resync(Millis now);
  void OnExport(const protocol::TransportEvent& event, const protocol::ExportRequest& request,
                Millis now);
  void OnImport(const protocol::TransportEvent& event, const protocol::ImportRequest& request,
                Millis now);
  // What is sent in parts, and its bounds.
  struct UploadKind {
    const char* what;         // "bundle", "plan": in messages, and the uploads' key
    std::uint64_t max_bytes;  // the whole file's
    std::size_t max_at_once;  // uploads of this kind in progress
    const char* past_bound;   // what to do instead, for a file above max_bytes
  };
  // One part of a file sent in parts, whichever message carried it.
  struct UploadPart {
    const UploadKind& kind;
    std::string_view name;  // the file's, for messages
    std::string_view upload_id;
    std::uint64_t offset = 0;
    std::uint64_t total_size = 0;
    std::string_view bytes;
  };
  static const UploadKind kPlanUpload;
  static const UploadKind kBundleUpload;
  // Adds a part to its upload. The whole file once its last part is in, else nullopt
  // (the peer has been answered).
  std::optional<std::string> AddPart(const protocol::TransportEvent& event, const UploadPart& part,
                                     Millis now);
  std::optional<std::string> AddPart(const protocol::TransportEvent& event,
                                     const protocol::ImportRequest& part, Millis now);

  // The snapshot constructor copies the whole service and then points it at its own
  // store and sender.
  CoordinatorService(const CoordinatorService&) = default;

  CoordinatorCore core_;
  store::Store* store_;  // never null
  Sender send_;
  spdlog::logger& log_;
  std::int32_t max_bad_frames_;
  std::map<std::string, std::int32_t> bad_by_peer_;
  std::set<std::string> ignored_;
  AccessPolicy policy_;
  BundleKeys bundle_keys_;
  struct Upload {
    std::string bytes;
    std::uint64_t total = 0;
    Millis last{0};
  };
  std::map<std::string, Upload> uploads_;      // kind + ":" + key name + "/" + upload id
  std::map<std::string, std::string> owners_;  // experiment -> submitting key (stored)
  // key -> when its refusals within kRefusalWindow came, oldest first
  std::map<std::string, std::deque<Millis>> refused_by_;
  struct Quieted {
    Millis until{0};
    std::size_t refusals = 0;  // that quieted it
  };
  std::map<std::string, Quieted> quiet_until_;  // key -> ignored until then
  std::map<std::string, std::string> holder_;   // peer id -> key of its connection
  std::uint64_t bad_frames_ = 0;
  std::uint64_t failed_writes_ = 0;
  std::uint64_t out_of_memory_ = 0;
  bool resyncing_ = false;
  bool needs_resync_ = false;
  // Group commit (options.group_commit): messages held until Commit(), in order.
  bool group_commit_ = false;
  struct Outgoing {
    std::string peer;
    protocol::Message message;
  };
  std::vector<Outgoing> outbox_;
  bool unsynced_ = false;  // written since the last Commit()
  ServiceCounters counters_;
};

}  // namespace orch::coordinator
