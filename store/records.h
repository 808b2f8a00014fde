// The store's domain records: what the coordinator persists about plans, jobs, runs,
// digests, fingerprints and events. Plain values; the store owns no behaviour here
// beyond small predicates. These are the store's own types: the planner and the
// coordinator translate to and from them (the layers are siblings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::store {

// Life of a job (one cell x workload x repeat). Terminal: succeeded, failed, cancelled.
// `lost` means its current run's lease expired; the coordinator decides what follows.
enum class JobState : uint8_t {
  kPending = 0,
  kAssigned,
  kRunning,
  kSucceeded,
  kFailed,
  kLost,
  kCancelled,
};
inline constexpr uint8_t kMaxJobState = static_cast<uint8_t>(JobState::kCancelled);

// Life of one run (one attempt of a job on one agent).
enum class RunState : uint8_t {
  kAssigned = 0,
  kRunning,
  kSucceeded,
  kFailed,
  kLost,
  kCancelled,
};
inline constexpr uint8_t kMaxRunState = static_cast<uint8_t>(RunState::kCancelled);

std::string_view JobStateName(JobState state);
std::string_view RunStateName(RunState state);

// An experiment's plan: the expanded plan's JSON document (orch.plan/1,
// planner/plan_to_json.h writes it), stored under the experiment's name.
struct PlanRecord {
  std::string experiment;  // 1..255 bytes
  std::string json;        // opaque to the store
  // The name of the key that submitted it (docs/security.md); empty without
  // authentication.
  std::string owner = {};
  friend bool operator==(const PlanRecord&, const PlanRecord&) = default;
};

struct JobRecord {
  std::string id;          // 1..255 bytes; a hash of the canonical coordinate
  std::string experiment;  // the experiment it belongs to
  JobState state = JobState::kPending;
  int32_t attempts = 0;        // runs started so far
  std::string last_error;      // empty when none
  std::string current_run_id;  // empty when no run holds the job
  // When its plan was first stored, on the coordinator's clock (ms since the Unix
  // epoch); 0 when unknown (records written before submit times were stored).
  int64_t submitted_at_ms = 0;
  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

struct RunRecord {
  std::string id;  // 1..255 bytes
  std::string job_id;
  std::string agent_id;
  int64_t lease_expiry_ms = 0;  // milliseconds on the coordinator's clock; time is an input
  RunState state = RunState::kAssigned;
  int32_t exit_status = 0;
  std::string error;
  std::string host_fingerprint_id;    // key into the fingerprints table; empty if unknown
  std::string engine_fingerprint_id;  // same
  int64_t chunks_expected = -1;       // set by FinishRun; -1 while unknown
  int64_t chunks_received = 0;        // distinct chunk sequence numbers stored (store-maintained)
  bool finished = false;              // RunFinished stored
  // What RunFinished reported about the run (the agent's JSON: the driver's hello and done
  // frames, the exit). Opaque to the store; set by FinishRun only, kept by Apply; empty
  // until finished and for records written before summaries were stored.
  std::string summary;
  // Provenance of a run imported from a contributor's result bundle (docs/bundles.md);
  // empty (and 0) for the runs of connected agents.
  std::string contributor = {};    // the name of the key that signed the bundle
  std::string bundle_sha256 = {};  // SHA-256 (hex) of the bundle file it came in
  int64_t imported_at_ms = 0;      // when it was imported, ms since the Unix epoch
  // When it was assigned and when its RunFinished was stored, on the coordinator's clock
  // (ms since the Unix epoch); 0 when unknown (records written before the times were
  // stored; a run lost or cancelled without a RunFinished has no end time).
  int64_t assigned_at_ms = 0;
  int64_t ended_at_ms = 0;

  // Complete: RunFinished and every chunk it announced are stored.
  bool Complete() const {
    return finished && chunks_expected >= 0 && chunks_received == chunks_expected;
  }
  friend bool operator==(const RunRecord&, const RunRecord&) = default;
};

// One per-position digest of a run. The bytes are opaque to the store.
struct DigestRecord {
  uint64_t position = 0;
  std::string bytes;
  friend bool operator==(const DigestRecord&, const DigestRecord&) = default;
};

// An entry of the append-only event log. `seq` is assigned by the store.
struct EventRecord {
  uint64_t seq = 0;     // 1, 2, 3, ... in append order; ignored on input
  int64_t time_ms = 0;  // when it happened, on the caller's clock
  std::string kind;     // e.g. "job.assigned"
  std::string subject;  // the id it is about
  std::string detail;   // free text or JSON
  friend bool operator==(const EventRecord&, const EventRecord&) = default;
};

// What RunFinished reports.
struct RunOutcome {
  RunState state = RunState::kSucceeded;
  int32_t exit_status = 0;
  std::string error;
  int64_t chunks_expected = 0;  // how many chunks the agent sent: seqs 0..chunks_expected-1
  std::string summary;          // RunFinished's summary, stored as RunRecord::summary
  int64_t ended_at_ms = 0;      // when it was received: RunRecord::ended_at_ms
};

// A contributor's result bundle that was imported (docs/bundles.md), kept under the
// SHA-256 of its file so that importing it again changes nothing.
struct BundleRecord {
  std::string sha256;       // of the bundle file (hex); 1..255 bytes
  std::string contributor;  // the name of the key that signed it
  std::string signer;       // that key's Ed25519 public key (Z85)
  uint64_t sequence = 0;    // the signer's sequence number of this bundle
  std::string experiment;   // the experiment its runs belong to
  std::string nonce;        // of the plan bundle it answers
  int64_t imported_at_ms = 0;
  std::vector<std::string> run_ids;  // the runs it added, as stored
  friend bool operator==(const BundleRecord&, const BundleRecord&) = default;
};

// The newest bundle imported per signing key: a bundle whose sequence number is not
// above it is a replay or a rollback.
struct SignerRecord {
  std::string signer;  // Ed25519 public key (Z85); 1..255 bytes
  uint64_t sequence = 0;
  std::string bundle_sha256;  // the bundle that set it
  friend bool operator==(const SignerRecord&, const SignerRecord&) = default;
};

// One run of a bundle as it is stored: finished, with its digests in chunks (seq 0, 1,
// ...), so that it is complete exactly when every chunk is there.
struct ImportedRun {
  RunRecord run;  // finished; chunks_expected == chunks.size(); provenance set
  std::vector<std::vector<DigestRecord>> chunks;
};

// Everything one bundle import writes, in one atomic write.
struct BundleImport {
  BundleRecord bundle;
  std::vector<ImportedRun> runs;
  std::vector<std::pair<std::string, std::string>> fingerprints;  // id, JSON
  std::vector<JobRecord> jobs;  // job records to replace (a job the bundle completed)
  std::vector<EventRecord> events;
};

// Whether a write stored something new or found it already stored (idempotent retry).
enum class WriteOutcome : uint8_t { kStored, kDuplicate };

// One atomic state transition: the job and/or run records to write, and the events
// that explain it. Absent parts are left unchanged.
struct StateChange {
  std::optional<JobRecord> job;
  std::optional<RunRecord> run;
  std::vector<EventRecord> events;
};

// Everything the coordinator needs to rebuild its state after a restart. Digests and
// events are not included: scan them (Store::ScanDigests, Store::ScanEvents).
struct StoreState {
  std::vector<PlanRecord> plans;  // in id order
  std::vector<JobRecord> jobs;    // in id order
  std::vector<RunRecord> runs;    // in id order
  uint64_t last_event_seq = 0;    // 0 when the log is empty
  friend bool operator==(const StoreState&, const StoreState&) = default;
};

}  // namespace orch::store
