// FailingStore: wraps a Store and makes chosen writes fail with IoError "disk full",
// as a full disk would, or throw std::bad_alloc, as an exhausted memory would. A failed write never reaches the wrapped store, so tests can
// check that the caller copes with the error and that the store still holds exactly
// what it held before. Reads always pass through.
//
// Writes are PutPlan, ReplacePlan, Apply, AppendChunk, FinishRun, PutFingerprint, ImportBundle,
// AppendEvent and Sync;
// they are numbered 1, 2, 3, ... from construction (or the last Reset), failed ones included.
#pragma once

#include <cstdint>
#include <mutex>

#include "store/store.h"

namespace orch::store {

class FailingStore final : public Store {
 public:
  explicit FailingStore(Store& inner);  // borrows `inner`, which must outlive this

  // Only write number `n` fails (1-based, counted from now).
  void FailWriteNumber(int64_t n);
  // Write number `n` and every write after it fail, until Reset.
  void FailWritesFrom(int64_t n);
  // Write number `n` throws std::bad_alloc instead (counted as failed).
  void ExhaustMemoryOnWriteNumber(int64_t n);
  // Writes pass again; the count restarts.
  void Reset();
  int64_t failed_writes() const;
  // Times LoadState was called (a whole-state read; what a restart does), since
  // construction.
  int64_t state_loads() const;

  Result<int> PutPlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) override;
  Result<int> ReplacePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) override;
  Result<PlanRecord> GetPlan(std::string_view experiment) override;
  Result<JobRecord> GetJob(std::string_view job_id) override;
  Result<std::vector<JobRecord>> ListJobs(std::string_view experiment) override;
  Status Apply(const StateChange& change) override;
  Status Sync() override;  // counts as a write
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
  // Counts one write; the injected error when it is to fail, OK otherwise.
  Status NextWrite(std::string_view what);

  Store& inner_;
  mutable std::mutex mu_;
  int64_t state_loads_ = 0;
  int64_t writes_ = 0;
  int64_t fail_from_ = 0;  // 0: none
  bool fail_only_one_ = false;
  bool throw_bad_alloc_ = false;
  int64_t failed_ = 0;
};

}  // namespace orch::store
