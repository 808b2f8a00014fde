// Store: the coordinator's durable memory, in domain terms.
//
// Implementations: OpenRocksDbStore (store/rocksdb_store.h), MakeMemoryStore
// (store/memory_store.h) and the fault-injecting FailingStore (store/failing_store.h).
// All pass one contract test suite (tests/store/store_contract_test.cc).
//
// Contracts shared by every implementation:
// - Every mutating call is atomic: it is applied entirely or not at all. A call that
//   returns an error has changed nothing.
// - A mutating call that returns OK is durable to the degree the implementation promises
//   (RocksDB: WAL synced when its options ask, the default).
// - Ids are 1..255 bytes; others are InvalidArgument.
// - Stored bytes that do not decode give DataLoss naming the table and key; no crash. A
//   record written by a newer orch is FailedPrecondition saying so (codec.h).
// - Calls may come from several threads; each call is serialized with the writes.
//   Visitors run inside the call and must not call back into the store.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/records.h"

namespace orch::store {

// Receives digests in position order; returns false to stop the scan early.
using DigestVisitor = std::function<bool(uint64_t position, std::string_view bytes)>;
// Receives events in sequence order; returns false to stop early.
using EventVisitor = std::function<bool(const EventRecord& event)>;

class Store {
 public:
  virtual ~Store() = default;

  // --- plans and jobs ---

  // Stores an experiment and its jobs in one write. Idempotent: resubmitting the same
  // plan inserts only jobs not yet stored; stored jobs keep their state. Returns how many
  // jobs were inserted. Every job's experiment must equal plan.id (InvalidArgument); a plan
  // id already stored with another name or JSON is AlreadyExists.
  virtual Result<int> PutPlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) = 0;
  // As PutPlan, but the plan may already be stored with other JSON, which it replaces (an
  // edited spec resubmitted under the same name). Stored jobs keep their state, whether
  // or not the new plan lists them. AlreadyExists only when the stored name differs.
  virtual Result<int> ReplacePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) = 0;
  virtual Result<PlanRecord> GetPlan(std::string_view experiment) = 0;  // NotFound
  virtual Result<JobRecord> GetJob(std::string_view job_id) = 0;        // NotFound
  // The jobs of one experiment in job id order; empty for an unknown plan.
  virtual Result<std::vector<JobRecord>> ListJobs(std::string_view experiment) = 0;

  // --- transitions ---

  // Writes change.job and/or change.run and appends change.events, in one write.
  // The job must already exist (NotFound); a run's job must exist (NotFound).
  // Store-maintained run fields are kept: chunks_received and summary keep their stored
  // values, and a finished run stays finished.
  virtual Status Apply(const StateChange& change) = 0;
  virtual Result<RunRecord> GetRun(std::string_view run_id) = 0;  // NotFound
  // The runs of the jobs named, in run id order (one scan of the runs table). A stored
  // run that does not decode fails the call only when it may belong to one of those
  // jobs (its job id is read from the fields every format version starts with), so a
  // damaged or newer run of another experiment does not hide this one's.
  virtual Result<std::vector<RunRecord>> ListRunsOfJobs(
      const std::set<std::string, std::less<>>& job_ids) = 0;

  // --- ingestion ---

  // Stores one DigestChunk: its records and the fact that (run_id, seq) arrived, in one
  // write, durable before OK returns. Idempotent on (run_id, seq): a resent chunk is not
  // stored again and yields kDuplicate. A record at an already stored position replaces
  // it. Chunks may arrive after RunFinished (resent after a reconnect) as long as their
  // seq is below the chunk count it announced; a new chunk beyond it is
  // FailedPrecondition. NotFound for an unknown run. `stored_run`, when given, receives
  // the run's record as stored once the call returns OK (kStored or kDuplicate), what
  // GetRun would read then: the coordinator decides on it without reading it back.
  virtual Result<WriteOutcome> AppendChunk(std::string_view run_id, uint64_t seq,
                                           const std::vector<DigestRecord>& records,
                                           RunRecord* stored_run = nullptr) = 0;

  // Stores RunFinished: the outcome (with its summary), finished = true, and, when given,
  // the job's new record, in one write. Idempotent: a run already finished is left as it
  // is and yields kDuplicate. NotFound for an unknown run or job. `stored_run`: as for
  // AppendChunk.
  virtual Result<WriteOutcome> FinishRun(std::string_view run_id, const RunOutcome& outcome,
                                         const std::optional<JobRecord>& job,
                                         RunRecord* stored_run = nullptr) = 0;

  // Streams a run's digests with position >= from_position in position order. Memory
  // use does not depend on the number of digests. An unknown run has none.
  virtual Status ScanDigests(std::string_view run_id, uint64_t from_position,
                             const DigestVisitor& visit) = 0;

  // --- fingerprints ---

  // Stores a host or engine fingerprint once. A second put of the same id and JSON is
  // kDuplicate; the same id with other JSON is AlreadyExists (ids are content hashes).
  virtual Result<WriteOutcome> PutFingerprint(std::string_view id, std::string_view json) = 0;
  virtual Result<std::string> GetFingerprint(std::string_view id) = 0;  // NotFound

  // --- bundles ---

  // Stores a result bundle's runs, digests, fingerprints and job records, its record and
  // its signer's new sequence number, in one write (all or nothing). kDuplicate, and
  // nothing written, when a bundle of that SHA-256 is already stored. FailedPrecondition
  // when the signer's stored sequence number is not below the bundle's (a replay or a
  // rollback; the message names both numbers and the bundle that set the stored one).
  // NotFound for a job that is not stored; AlreadyExists for a run id already stored or
  // a fingerprint id stored with other JSON; InvalidArgument for a run whose
  // chunks_expected is not its chunk count or that is not finished.
  virtual Result<WriteOutcome> ImportBundle(const BundleImport& import) = 0;
  virtual Result<BundleRecord> GetBundle(std::string_view sha256) = 0;  // NotFound
  virtual Result<SignerRecord> GetSigner(std::string_view signer) = 0;  // NotFound

  // --- events ---

  // Appends one event; returns the sequence number it was given (last + 1).
  virtual Result<uint64_t> AppendEvent(const EventRecord& event) = 0;
  // Streams events with seq >= from_seq in order.
  virtual Status ScanEvents(uint64_t from_seq, const EventVisitor& visit) = 0;

  // --- durability ---

  // Makes every write that returned OK durable. With per-write syncs off (RocksDB's
  // sync_chunks / sync_state), the coordinator writes a burst of messages and then
  // syncs once before it acknowledges any of them (group commit). An error: those
  // writes may not be durable; acknowledge none of them.
  virtual Status Sync() = 0;

  // --- restart ---

  // Plans, jobs and runs, read in one pass per table. Meant for startup, before writes
  // begin: tables are not read from one snapshot.
  virtual Result<StoreState> LoadState() = 0;
};

}  // namespace orch::store
