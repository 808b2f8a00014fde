// KvStore: the Store contract implemented once over a KvEngine (internal to store/).
//
// Owns the engine. Writes are serialized by one mutex, so each read-check-write
// (idempotency, preconditions) sees no interleaved writer; every mutating call builds
// one KvBatch and writes it once, so it is applied entirely or not at all. Reads go
// straight to the engine, which is safe to read from several threads.
#pragma once

#include <memory>
#include <mutex>

#include "store/kv_engine.h"
#include "store/store.h"

namespace orch::store {

struct KvStoreOptions {
  bool sync_chunks = true;  // AppendChunk durable before it returns
  bool sync_state = true;   // every other write durable before it returns
};

class KvStore final : public Store {
 public:
  // Reads the last event sequence number; DataLoss if the events table is damaged.
  static Result<std::unique_ptr<Store>> Open(std::unique_ptr<KvEngine> engine,
                                             KvStoreOptions options);

  Result<int> PutPlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) override;
  Result<int> ReplacePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) override;
  Result<PlanRecord> GetPlan(std::string_view experiment) override;
  Result<JobRecord> GetJob(std::string_view job_id) override;
  Result<std::vector<JobRecord>> ListJobs(std::string_view experiment) override;
  Status Apply(const StateChange& change) override;
  Status Sync() override;
  Result<RunRecord> GetRun(std::string_view run_id) override;
  Result<std::vector<RunRecord>> ListRunsOfJobs(
      const std::set<std::string, std::less<>>& job_ids) override;
  Result<WriteOutcome> AppendChunk(std::string_view run_id, uint64_t seq,
                                   const std::vector<DigestRecord>& records,
                                   RunRecord* stored_run = nullptr) override;
  Result<WriteOutcome> FinishRun(std::string_view run_id, const RunOutcome& outcome,
                                 const std::optional<JobRecord>& job,
                                 RunRecord* stored_run = nullptr) override;
  Status ScanDigests(std::string_view run_id, uint64_t from_position,
                     const DigestVisitor& visit) override;
  Result<WriteOutcome> PutFingerprint(std::string_view id, std::string_view json) override;
  Result<std::string> GetFingerprint(std::string_view id) override;
  Result<WriteOutcome> ImportBundle(const BundleImport& import) override;
  Result<BundleRecord> GetBundle(std::string_view sha256) override;
  Result<SignerRecord> GetSigner(std::string_view signer) override;
  Result<uint64_t> AppendEvent(const EventRecord& event) override;
  Status ScanEvents(uint64_t from_seq, const EventVisitor& visit) override;
  Result<StoreState> LoadState() override;

 private:
  KvStore(std::unique_ptr<KvEngine> engine, KvStoreOptions options, uint64_t last_event_seq);

  // Absent records are nullopt; undecodable ones DataLoss.
  Result<std::optional<PlanRecord>> FindPlan(std::string_view experiment);
  Result<std::optional<JobRecord>> FindJob(std::string_view job_id);
  Result<std::optional<RunRecord>> FindRun(std::string_view run_id);
  Status WritePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs, bool replace,
                   int& inserted);
  Status WriteChange(const StateChange& change);
  // The checks of ImportBundle (under write_mu_), and its batch.
  Status CheckImport(const BundleImport& import);
  uint64_t AddImport(const BundleImport& import, KvBatch& batch);  // events added
  // Adds the events with sequence numbers after last_event_seq_; returns how many.
  uint64_t AddEvents(KvBatch& batch, const std::vector<EventRecord>& events);
  template <typename Record, typename Decode>
  Status ScanTable(Table table, Decode decode, std::vector<Record>& out);

  std::unique_ptr<KvEngine> engine_;
  const KvStoreOptions options_;
  std::mutex write_mu_;
  uint64_t last_event_seq_;  // guarded by write_mu_
};

}  // namespace orch::store
