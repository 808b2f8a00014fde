#include "store/failing_store.h"

#include <new>

namespace orch::store {

FailingStore::FailingStore(Store& inner) : inner_(inner) {}

void FailingStore::FailWriteNumber(int64_t n) {
  std::lock_guard lock(mu_);
  writes_ = 0;
  fail_from_ = n;
  fail_only_one_ = true;
  throw_bad_alloc_ = false;
}

void FailingStore::FailWritesFrom(int64_t n) {
  std::lock_guard lock(mu_);
  writes_ = 0;
  fail_from_ = n;
  fail_only_one_ = false;
  throw_bad_alloc_ = false;
}

void FailingStore::ExhaustMemoryOnWriteNumber(int64_t n) {
  FailWriteNumber(n);
  std::lock_guard lock(mu_);
  throw_bad_alloc_ = true;
}

void FailingStore::Reset() {
  std::lock_guard lock(mu_);
  writes_ = 0;
  fail_from_ = 0;
  throw_bad_alloc_ = false;
}

int64_t FailingStore::failed_writes() const {
  std::lock_guard lock(mu_);
  return failed_;
}

Status FailingStore::NextWrite(std::string_view what) {
  std::lock_guard lock(mu_);
  ++writes_;
  bool fail = fail_from_ > 0 && (fail_only_one_ ? writes_ == fail_from_ : writes_ >= fail_from_);
  if (!fail) return Status::Ok();
  ++failed_;
  if (throw_bad_alloc_) throw std::bad_alloc();
  return IoError(std::string(what) + ": injected: disk full");
}

Result<int> FailingStore::PutPlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) {
  ORCH_RETURN_IF_ERROR(NextWrite("put plan"));
  return inner_.PutPlan(plan, jobs);
}

Result<int> FailingStore::ReplacePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) {
  ORCH_RETURN_IF_ERROR(NextWrite("replace plan"));
  return inner_.ReplacePlan(plan, jobs);
}

Status FailingStore::Apply(const StateChange& change) {
  ORCH_RETURN_IF_ERROR(NextWrite("apply state change"));
  return inner_.Apply(change);
}

Result<WriteOutcome> FailingStore::AppendChunk(std::string_view run_id, uint64_t seq,
                                               const std::vector<DigestRecord>& records,
                                               RunRecord* stored_run) {
  ORCH_RETURN_IF_ERROR(NextWrite("append chunk"));
  return inner_.AppendChunk(run_id, seq, records, stored_run);
}

Result<WriteOutcome> FailingStore::FinishRun(std::string_view run_id, const RunOutcome& outcome,
                                             const std::optional<JobRecord>& job,
                                             RunRecord* stored_run) {
  ORCH_RETURN_IF_ERROR(NextWrite("finish run"));
  return inner_.FinishRun(run_id, outcome, job, stored_run);
}

Result<WriteOutcome> FailingStore::PutFingerprint(std::string_view id, std::string_view json) {
  ORCH_RETURN_IF_ERROR(NextWrite("put fingerprint"));
  return inner_.PutFingerprint(id, json);
}

Result<WriteOutcome> FailingStore::ImportBundle(const BundleImport& import) {
  ORCH_RETURN_IF_ERROR(NextWrite("import bundle"));
  return inner_.ImportBundle(import);
}

Result<BundleRecord> FailingStore::GetBundle(std::string_view sha256) {
  return inner_.GetBundle(sha256);
}

Result<SignerRecord> FailingStore::GetSigner(std::string_view signer) {
  return inner_.GetSigner(signer);
}

Result<uint64_t> FailingStore::AppendEvent(const EventRecord& event) {
  ORCH_RETURN_IF_ERROR(NextWrite("append event"));
  return inner_.AppendEvent(event);
}

Result<PlanRecord> FailingStore::GetPlan(std::string_view experiment) {
  return inner_.GetPlan(experiment);
}
Result<JobRecord> FailingStore::GetJob(std::string_view job_id) { return inner_.GetJob(job_id); }
Result<std::vector<JobRecord>> FailingStore::ListJobs(std::string_view experiment) {
  return inner_.ListJobs(experiment);
}
Result<RunRecord> FailingStore::GetRun(std::string_view run_id) { return inner_.GetRun(run_id); }
Status FailingStore::ScanDigests(std::string_view run_id, uint64_t from_position,
                                 const DigestVisitor& visit) {
  return inner_.ScanDigests(run_id, from_position, visit);
}
Result<std::string> FailingStore::GetFingerprint(std::string_view id) {
  return inner_.GetFingerprint(id);
}
Status FailingStore::ScanEvents(uint64_t from_seq, const EventVisitor& visit) {
  return inner_.ScanEvents(from_seq, visit);
}
int64_t FailingStore::state_loads() const {
  std::lock_guard lock(mu_);
  return state_loads_;
}

Result<StoreState> FailingStore::LoadState() {
  {
    std::lock_guard lock(mu_);
    ++state_loads_;
  }
  return inner_.LoadState();
}

Result<std::vector<RunRecord>> FailingStore::ListRunsOfJobs(
    const std::set<std::string, std::less<>>& job_ids) {
  return inner_.ListRunsOfJobs(job_ids);
}

Status FailingStore::Sync() {
  ORCH_RETURN_IF_ERROR(NextWrite("sync"));
  return inner_.Sync();
}

}  // namespace orch::store
