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
// - Bad input: frames that do not decode are counted and logged and dropped. A Hello of
//   another protocol version is answered with Reject naming both versions.
// - Whom it listens to (bad frames, refusals, quieted keys, who holds an agent's id,
//   who owns an experiment): coordinator/admission.h decides, without a transport; the
//   access policy is coordinator/access_policy.h's.
// - A plan larger than a frame arrives as Submit parts (upload_id), assembled as a
//   result bundle's parts are (coordinator/uploads.h) and then submitted whole; the
//   access policy checks the whole plan again (its experiment).
// - Bundles (docs/bundles.md): an ExportRequest is answered with a plan bundle signed
//   with the coordinator's key (BundleKeys), an ImportRequest by verifying the result
//   bundle and storing it in one write (bundle/result_bundle.h); the core is then told
//   the runs stored and the jobs completed (CoordinatorCore::OnImported), so those jobs
//   are not handed out. A submitter may import only into the experiments it submitted.
// Not thread-safe: one thread (the event loop) calls everything.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bundle/bundle_file.h"
#include "coordinator/access_policy.h"
#include "coordinator/admission.h"
#include "coordinator/coordinator_core.h"
#include "coordinator/service_counters.h"
#include "coordinator/uploads.h"
#include "protocol/identity_key.h"
#include "protocol/transport.h"
#include "store/store.h"

namespace orch::coordinator {

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
  void SetAccessPolicy(AccessPolicy policy) { state_.admission.SetPolicy(std::move(policy)); }
  void SetBundleKeys(BundleKeys keys) { state_.bundle_keys = std::move(keys); }

  void OnEvent(const protocol::TransportEvent& event, Millis now);
  void Tick(Millis now);
  // With options.group_commit: syncs the store once if anything was written since the
  // last commit, then sends every message held since. When the sync fails, the Acks
  // and positive CommandReplies among them are not sent (the writes they confirm may
  // not be durable; agents resend, and what is stored by then is acknowledged as a
  // duplicate); a CommandReply says the write failed instead. Without group commit
  // there is nothing to do. The shell calls it after each burst of events and tick.
  void Commit();
  std::optional<Millis> NextDeadline() const { return state_.core.NextDeadline(); }

  const CoordinatorCore& core() const { return state_.core; }
  std::uint64_t bad_frames() const { return state_.bad_frames; }
  std::uint64_t failed_writes() const { return state_.failed_writes; }
  // Requests refused because handling them ran out of memory.
  std::uint64_t out_of_memory() const { return state_.out_of_memory; }
  bool ignoring(const std::string& peer) const { return state_.admission.ignoring(peer); }
  // What it counted since it started (service_counters.h).
  const ServiceCounters& counters() const { return state_.counters; }

 private:
  void OnFrame(const protocol::TransportEvent& event, Millis now);
  void OnMessage(const protocol::TransportEvent& event, protocol::Message message, Millis now);
  void OnUndecodable(const std::string& peer, const Status& why);
  // False (after answering the peer) when the policy refuses the message.
  bool Permitted(const protocol::TransportEvent& event, const protocol::Message& message,
                 Millis now);
  // False when `message` is a part of a plan and the plan is not whole yet, or the
  // whole plan is refused (the peer has been answered); else true, with a plan sent in
  // parts put back together in `message`.
  bool WholePlan(const protocol::TransportEvent& event, protocol::Message& message, Millis now);
  // Adds a part to its upload. The whole file once its last part is in, else nullopt
  // (the peer has been answered).
  std::optional<std::string> AddPart(const protocol::TransportEvent& event, const UploadPart& part,
                                     Millis now);
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

  struct Outgoing {
    std::string peer;
    protocol::Message message;
  };
  // Everything the service holds but its store, its sender and its log: what the
  // snapshot constructor copies.
  struct State {
    CoordinatorCore core;
    Admission admission;
    Uploads uploads;
    BundleKeys bundle_keys;
    ServiceCounters counters;
    std::uint64_t bad_frames = 0;
    std::uint64_t failed_writes = 0;
    std::uint64_t out_of_memory = 0;
    bool resyncing = false;
    bool needs_resync = false;
    // Group commit (options.group_commit): messages held until Commit(), in order.
    bool group_commit = false;
    std::vector<Outgoing> outbox;
    bool unsynced = false;  // written since the last Commit()
  };

  State state_;
  store::Store* store_;  // never null
  Sender send_;
  spdlog::logger& log_;
};

}  // namespace orch::coordinator
