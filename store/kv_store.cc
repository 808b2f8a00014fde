#include "store/kv_store.h"

#include <set>
#include <utility>

#include "store/codec.h"

namespace orch::store {
namespace {

Status NotFoundIn(Table table, std::string_view id) {
  return NotFound(std::string(TableName(table)) + "/" + std::string(id) + " not found");
}

Status ValidateJob(const JobRecord& job) {
  ORCH_RETURN_IF_ERROR(ValidateId("job", job.id));
  return ValidateId("plan", job.experiment);
}

Status ValidateRun(const RunRecord& run) {
  ORCH_RETURN_IF_ERROR(ValidateId("run", run.id));
  return ValidateId("job", run.job_id);
}

}  // namespace

KvStore::KvStore(std::unique_ptr<KvEngine> engine, KvStoreOptions options, uint64_t last_event_seq)
    : engine_(std::move(engine)), options_(options), last_event_seq_(last_event_seq) {}

Result<std::unique_ptr<Store>> KvStore::Open(std::unique_ptr<KvEngine> engine,
                                             KvStoreOptions options) {
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> last, engine->LastKey(Table::kEvents));
  uint64_t last_seq = 0;
  if (last) {
    if (last->size() != 8) {
      return Status(StatusCode::kDataLoss,
                    "open store: malformed key " + DescribeKey(Table::kEvents, *last));
    }
    // Event keys are big-endian seqs, so the greatest key is the last event:
    // numbering resumes after it.
    last_seq = ReadBigEndian64(*last);
  }
  return std::unique_ptr<Store>(new KvStore(std::move(engine), options, last_seq));
}

Result<std::optional<PlanRecord>> KvStore::FindPlan(std::string_view experiment) {
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kPlans, experiment));
  if (!bytes) return std::optional<PlanRecord>();
  ORCH_ASSIGN_OR_RETURN(PlanRecord plan,
                        DecodePlan(DescribeKey(Table::kPlans, experiment), *bytes));
  return std::optional<PlanRecord>(std::move(plan));
}

Result<std::optional<JobRecord>> KvStore::FindJob(std::string_view job_id) {
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kJobs, job_id));
  if (!bytes) return std::optional<JobRecord>();
  ORCH_ASSIGN_OR_RETURN(JobRecord job, DecodeJob(DescribeKey(Table::kJobs, job_id), *bytes));
  return std::optional<JobRecord>(std::move(job));
}

Result<std::optional<RunRecord>> KvStore::FindRun(std::string_view run_id) {
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kRuns, run_id));
  if (!bytes) return std::optional<RunRecord>();
  ORCH_ASSIGN_OR_RETURN(RunRecord run, DecodeRun(DescribeKey(Table::kRuns, run_id), *bytes));
  return std::optional<RunRecord>(std::move(run));
}

uint64_t KvStore::AddEvents(KvBatch& batch, const std::vector<EventRecord>& events) {
  uint64_t seq = last_event_seq_;
  for (const EventRecord& event : events) {
    EventRecord stored = event;
    // last_event_seq_ itself moves only once the batch is written (the callers): a
    // failed write leaves its numbers free for the next one.
    stored.seq = ++seq;
    batch.Add(Table::kEvents, EventKey(stored.seq), EncodeEvent(stored));
  }
  return events.size();
}

// --- plans and jobs ---

Result<int> KvStore::PutPlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) {
  int inserted = 0;
  Status status = WritePlan(plan, jobs, /*replace=*/false, inserted);
  if (!status.ok()) return status.WithContext("put plan " + plan.experiment);
  return inserted;
}

Result<int> KvStore::ReplacePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs) {
  int inserted = 0;
  Status status = WritePlan(plan, jobs, /*replace=*/true, inserted);
  if (!status.ok()) return status.WithContext("replace plan " + plan.experiment);
  return inserted;
}

Status KvStore::WritePlan(const PlanRecord& plan, const std::vector<JobRecord>& jobs, bool replace,
                          int& inserted) {
  ORCH_RETURN_IF_ERROR(ValidateId("plan", plan.experiment));
  for (const JobRecord& job : jobs) {
    ORCH_RETURN_IF_ERROR(ValidateJob(job));
    if (job.experiment != plan.experiment) {
      return InvalidArgument("job " + job.id + " belongs to plan " + job.experiment);
    }
  }
  // The checks above need no store; the lock covers only the read-check-write.
  std::lock_guard lock(write_mu_);
  KvBatch batch;
  ORCH_ASSIGN_OR_RETURN(std::optional<PlanRecord> stored, FindPlan(plan.experiment));
  if (stored && *stored != plan && !replace) {
    return Status(StatusCode::kAlreadyExists, "a different plan is stored under this id");
  }
  if (!stored || *stored != plan) batch.Add(Table::kPlans, plan.experiment, EncodePlan(plan));
  std::set<std::string_view> seen;
  for (const JobRecord& job : jobs) {
    // A job listed twice would pass the Get below twice (the batch is not written
    // yet) and be inserted and counted twice.
    if (!seen.insert(job.id).second) continue;
    ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kJobs, job.id));
    if (bytes) continue;  // stored jobs keep their state
    batch.Add(Table::kJobs, job.id, EncodeJob(job));
    // The index lets ListJobs scan one plan's jobs rather than every job.
    batch.Add(Table::kPlanJobs, PlanJobKey(plan.experiment, job.id), "");
    ++inserted;
  }
  if (batch.puts.empty()) return Status::Ok();
  return engine_->Write(batch, options_.sync_state);
}

Result<PlanRecord> KvStore::GetPlan(std::string_view experiment) {
  ORCH_RETURN_IF_ERROR(ValidateId("plan", experiment));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kPlans, experiment));
  if (!bytes) return NotFoundIn(Table::kPlans, experiment);
  return DecodePlan(DescribeKey(Table::kPlans, experiment), *bytes);
}

Result<JobRecord> KvStore::GetJob(std::string_view job_id) {
  ORCH_RETURN_IF_ERROR(ValidateId("job", job_id));
  ORCH_ASSIGN_OR_RETURN(std::optional<JobRecord> job, FindJob(job_id));
  if (!job) return NotFoundIn(Table::kJobs, job_id);
  return std::move(*job);
}

Result<std::vector<JobRecord>> KvStore::ListJobs(std::string_view experiment) {
  ORCH_RETURN_IF_ERROR(ValidateId("plan", experiment));
  std::vector<JobRecord> jobs;
  Status inner;
  Status scan = engine_->Scan(
      Table::kPlanJobs, IdPrefix(experiment), "", [&](std::string_view key, std::string_view) {
        std::string_view job_id = JobIdOfPlanJobKey(key, experiment);
        Result<std::optional<JobRecord>> job = FindJob(job_id);
        if (!job.ok()) {
          inner = job.status();
        } else if (!job->has_value()) {
          inner = Status(StatusCode::kDataLoss,
                         "index names missing job " + DescribeKey(Table::kJobs, job_id));
        } else {
          jobs.push_back(std::move(**job));
        }
        return inner.ok();
      });
  if (!scan.ok()) return scan.WithContext("list jobs of plan " + std::string(experiment));
  if (!inner.ok()) return inner.WithContext("list jobs of plan " + std::string(experiment));
  return jobs;
}

// --- transitions ---

Status KvStore::Apply(const StateChange& change) {
  return WriteChange(change).WithContext("apply state change");
}

Status KvStore::WriteChange(const StateChange& change) {
  if (change.job) ORCH_RETURN_IF_ERROR(ValidateJob(*change.job));
  if (change.run) ORCH_RETURN_IF_ERROR(ValidateRun(*change.run));
  std::lock_guard lock(write_mu_);
  KvBatch batch;
  std::optional<RunRecord> stored;
  if (change.run) {
    ORCH_ASSIGN_OR_RETURN(stored, FindRun(change.run->id));
  }
  // A stored run's job was checked when the run was first written, and the store never
  // deletes a job: the job of an already stored run needs no lookup (two of the three
  // state changes of every run).
  bool run_job_known = stored && stored->job_id == change.run->job_id;
  if (change.job) {
    // Only plans create jobs, with their index entry: a job first written here would
    // be missing from ListJobs.
    if (!(run_job_known && change.job->id == change.run->job_id)) {
      ORCH_ASSIGN_OR_RETURN(std::optional<JobRecord> job, FindJob(change.job->id));
      if (!job) return NotFoundIn(Table::kJobs, change.job->id);
    }
    batch.Add(Table::kJobs, change.job->id, EncodeJob(*change.job));
  }
  if (change.run) {
    RunRecord run = *change.run;
    bool job_in_change = change.job && change.job->id == run.job_id;
    if (!job_in_change && !run_job_known) {
      ORCH_ASSIGN_OR_RETURN(std::optional<JobRecord> job, FindJob(run.job_id));
      if (!job) return NotFoundIn(Table::kJobs, run.job_id);
    }
    // The coordinator's record does not carry what AppendChunk and FinishRun wrote
    // (chunks received, finished, summary): a state change must not reset them.
    run.chunks_received = stored ? stored->chunks_received : 0;
    run.finished = run.finished || (stored && stored->finished);
    run.summary = stored ? stored->summary : std::string();
    if (run.ended_at_ms == 0 && stored) run.ended_at_ms = stored->ended_at_ms;
    batch.Add(Table::kRuns, run.id, EncodeRun(run));
  }
  uint64_t added = AddEvents(batch, change.events);
  if (batch.puts.empty()) return Status::Ok();
  ORCH_RETURN_IF_ERROR(engine_->Write(batch, options_.sync_state));
  last_event_seq_ += added;
  return Status::Ok();
}

Result<RunRecord> KvStore::GetRun(std::string_view run_id) {
  ORCH_RETURN_IF_ERROR(ValidateId("run", run_id));
  ORCH_ASSIGN_OR_RETURN(std::optional<RunRecord> run, FindRun(run_id));
  if (!run) return NotFoundIn(Table::kRuns, run_id);
  return std::move(*run);
}

Result<std::vector<RunRecord>> KvStore::ListRunsOfJobs(
    const std::set<std::string, std::less<>>& job_ids) {
  std::vector<RunRecord> runs;
  Status inner;
  Status scan =
      engine_->Scan(Table::kRuns, "", "", [&](std::string_view key, std::string_view value) {
        Result<RunRecord> run = DecodeRun(DescribeKey(Table::kRuns, key), value);
        if (run.ok()) {
          if (job_ids.count(run->job_id) > 0) runs.push_back(std::move(*run));
          return true;
        }
        std::optional<std::string> job_id = PeekRunJobId(value);
        // A run that does not decode stops the listing only when it is one of the runs
        // asked for: a damaged record of another experiment does not block this one.
        if (job_id && job_ids.count(*job_id) == 0) return true;  // another experiment's
        inner = run.status();
        return false;
      });
  if (!scan.ok()) return scan.WithContext("list runs");
  if (!inner.ok()) return inner.WithContext("list runs");
  return runs;
}

// --- ingestion ---

Result<WriteOutcome> KvStore::AppendChunk(std::string_view run_id, uint64_t seq,
                                          const std::vector<DigestRecord>& records,
                                          RunRecord* stored_run) {
  auto context = [&] {
    return "append chunk " + std::to_string(seq) + " of run " + std::string(run_id);
  };
  Status valid = ValidateId("run", run_id);
  if (!valid.ok()) return valid.WithContext(context());
  std::lock_guard lock(write_mu_);
  Result<std::optional<RunRecord>> run = FindRun(run_id);
  if (!run.ok()) return run.status().WithContext(context());
  if (!run->has_value()) return NotFoundIn(Table::kRuns, run_id).WithContext(context());
  std::string chunk_key = ChunkKey(run_id, seq);
  Result<std::optional<std::string>> seen = engine_->Get(Table::kChunks, chunk_key);
  if (!seen.ok()) return seen.status().WithContext(context());
  // Agents resend until acknowledged: a chunk already stored is acknowledged again,
  // not stored twice.
  if (seen->has_value()) {
    if (stored_run) *stored_run = std::move(**run);
    return WriteOutcome::kDuplicate;
  }
  RunRecord& updated = **run;
  // A finished run announced its chunk count: a chunk at or past it cannot be one
  // of its chunks.
  if (updated.finished &&
      (updated.chunks_expected < 0 || seq >= static_cast<uint64_t>(updated.chunks_expected))) {
    return Status(StatusCode::kFailedPrecondition, context() + ": the run finished with " +
                                                       std::to_string(updated.chunks_expected) +
                                                       " chunks");
  }
  ++updated.chunks_received;
  KvBatch batch;
  // One put per record, plus the chunk's entry and the run record.
  batch.puts.reserve(records.size() + 2);
  for (const DigestRecord& record : records) {
    batch.AddBorrowed(Table::kDigests, DigestKey(run_id, record.position), record.bytes);
  }
  batch.Add(Table::kChunks, std::move(chunk_key),
            EncodeChunkCount(static_cast<uint32_t>(records.size())));
  batch.Add(Table::kRuns, std::string(run_id), EncodeRun(updated));
  Status write = engine_->Write(batch, options_.sync_chunks);
  if (!write.ok()) return write.WithContext(context());
  if (stored_run) *stored_run = std::move(updated);
  return WriteOutcome::kStored;
}

Result<WriteOutcome> KvStore::FinishRun(std::string_view run_id, const RunOutcome& outcome,
                                        const std::optional<JobRecord>& job,
                                        RunRecord* stored_run) {
  std::string context = "finish run " + std::string(run_id);
  Status valid = ValidateId("run", run_id);
  if (valid.ok() && job) valid = ValidateJob(*job);
  if (!valid.ok()) return valid.WithContext(context);
  std::lock_guard lock(write_mu_);
  Result<std::optional<RunRecord>> run = FindRun(run_id);
  if (!run.ok()) return run.status().WithContext(context);
  if (!run->has_value()) return NotFoundIn(Table::kRuns, run_id).WithContext(context);
  RunRecord& updated = **run;
  // The first RunFinished stored is the run's end; a resent one changes nothing.
  if (updated.finished) {
    if (stored_run) *stored_run = std::move(updated);
    return WriteOutcome::kDuplicate;
  }
  KvBatch batch;
  if (job) {
    Result<std::optional<JobRecord>> stored = FindJob(job->id);
    if (!stored.ok()) return stored.status().WithContext(context);
    if (!stored->has_value()) return NotFoundIn(Table::kJobs, job->id).WithContext(context);
    batch.Add(Table::kJobs, job->id, EncodeJob(*job));
  }
  updated.state = outcome.state;
  updated.exit_status = outcome.exit_status;
  updated.error = outcome.error;
  updated.chunks_expected = outcome.chunks_expected;
  updated.summary = outcome.summary;
  updated.ended_at_ms = outcome.ended_at_ms;
  updated.finished = true;
  batch.Add(Table::kRuns, std::string(run_id), EncodeRun(updated));
  Status write = engine_->Write(batch, options_.sync_state);
  if (!write.ok()) return write.WithContext(context);
  if (stored_run) *stored_run = std::move(updated);
  return WriteOutcome::kStored;
}

Status KvStore::ScanDigests(std::string_view run_id, uint64_t from_position,
                            const DigestVisitor& visit) {
  ORCH_RETURN_IF_ERROR(ValidateId("run", run_id));
  return engine_
      ->Scan(Table::kDigests, IdPrefix(run_id), DigestKey(run_id, from_position),
             [&](std::string_view key, std::string_view value) {
               return visit(TrailingNumber(key), value);
             })
      .WithContext("scan digests of run " + std::string(run_id));
}

// --- fingerprints ---

Result<WriteOutcome> KvStore::PutFingerprint(std::string_view id, std::string_view json) {
  std::string context = "put fingerprint " + std::string(id);
  Status valid = ValidateId("fingerprint", id);
  if (!valid.ok()) return valid.WithContext(context);
  std::lock_guard lock(write_mu_);
  Result<std::optional<std::string>> stored = engine_->Get(Table::kHosts, id);
  if (!stored.ok()) return stored.status().WithContext(context);
  if (stored->has_value()) {
    // Ids are content hashes of the JSON: the same id with other JSON is refused
    // rather than overwritten.
    if (**stored == json) return WriteOutcome::kDuplicate;
    return Status(StatusCode::kAlreadyExists, context + ": another fingerprint has this id");
  }
  KvBatch batch;
  batch.Add(Table::kHosts, std::string(id), std::string(json));
  Status write = engine_->Write(batch, options_.sync_state);
  if (!write.ok()) return write.WithContext(context);
  return WriteOutcome::kStored;
}

Result<std::string> KvStore::GetFingerprint(std::string_view id) {
  ORCH_RETURN_IF_ERROR(ValidateId("fingerprint", id));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> json, engine_->Get(Table::kHosts, id));
  if (!json) return NotFoundIn(Table::kHosts, id);
  return std::move(*json);
}

// --- bundles ---

Status KvStore::CheckImport(const BundleImport& import) {
  const BundleRecord& bundle = import.bundle;
  ORCH_RETURN_IF_ERROR(ValidateId("signer", bundle.signer));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> signer_bytes,
                        engine_->Get(Table::kSigners, bundle.signer));
  if (signer_bytes) {
    ORCH_ASSIGN_OR_RETURN(SignerRecord last,
                          DecodeSigner(DescribeKey(Table::kSigners, bundle.signer), *signer_bytes));
    // Each contributor key numbers its bundles: an old number is a replay or a
    // rollback of an earlier bundle.
    if (bundle.sequence <= last.sequence) {
      return Status(StatusCode::kFailedPrecondition,
                    "bundle sequence number " + std::to_string(bundle.sequence) + " of key " +
                        bundle.contributor + " is " +
                        (bundle.sequence == last.sequence ? "already used" : "below") +
                        " by bundle " + last.bundle_sha256 + " (sequence " +
                        std::to_string(last.sequence) + "): a " +
                        (bundle.sequence == last.sequence ? "replay" : "rollback"));
    }
  }
  std::set<std::string, std::less<>> job_ids;
  for (const JobRecord& job : import.jobs) {
    ORCH_RETURN_IF_ERROR(ValidateJob(job));
    job_ids.insert(job.id);
  }
  for (const ImportedRun& imported : import.runs) {
    const RunRecord& run = imported.run;
    ORCH_RETURN_IF_ERROR(ValidateRun(run));
    if (!run.finished || run.chunks_expected != static_cast<int64_t>(imported.chunks.size())) {
      return InvalidArgument("run " + run.id + ": an imported run must be finished with " +
                             "chunks_expected equal to its chunk count");
    }
    job_ids.insert(run.job_id);
    ORCH_ASSIGN_OR_RETURN(std::optional<std::string> stored, engine_->Get(Table::kRuns, run.id));
    // A bundle adds runs; it never overwrites one the store already has.
    if (stored) return Status(StatusCode::kAlreadyExists, "run " + run.id + " is already stored");
  }
  for (const std::string& job_id : job_ids) {
    ORCH_ASSIGN_OR_RETURN(std::optional<std::string> stored, engine_->Get(Table::kJobs, job_id));
    if (!stored) return NotFoundIn(Table::kJobs, job_id);
  }
  for (const auto& [id, json] : import.fingerprints) {
    ORCH_RETURN_IF_ERROR(ValidateId("fingerprint", id));
    ORCH_ASSIGN_OR_RETURN(std::optional<std::string> stored, engine_->Get(Table::kHosts, id));
    if (stored && *stored != json) {
      return Status(StatusCode::kAlreadyExists,
                    "fingerprint " + id + ": another fingerprint has this id");
    }
  }
  return Status::Ok();
}

uint64_t KvStore::AddImport(const BundleImport& import, KvBatch& batch) {
  for (const ImportedRun& imported : import.runs) {
    RunRecord run = imported.run;
    run.chunks_received = static_cast<int64_t>(imported.chunks.size());
    for (uint64_t seq = 0; seq < imported.chunks.size(); ++seq) {
      const std::vector<DigestRecord>& records = imported.chunks[seq];
      for (const DigestRecord& record : records) {
        batch.AddBorrowed(Table::kDigests, DigestKey(run.id, record.position), record.bytes);
      }
      batch.Add(Table::kChunks, ChunkKey(run.id, seq),
                EncodeChunkCount(static_cast<uint32_t>(records.size())));
    }
    batch.Add(Table::kRuns, run.id, EncodeRun(run));
  }
  for (const auto& [id, json] : import.fingerprints) batch.AddBorrowed(Table::kHosts, id, json);
  for (const JobRecord& job : import.jobs) batch.Add(Table::kJobs, job.id, EncodeJob(job));
  const BundleRecord& bundle = import.bundle;
  batch.Add(Table::kBundles, bundle.sha256, EncodeBundle(bundle));
  batch.Add(Table::kSigners, bundle.signer,
            EncodeSigner({bundle.signer, bundle.sequence, bundle.sha256}));
  return AddEvents(batch, import.events);
}

Result<WriteOutcome> KvStore::ImportBundle(const BundleImport& import) {
  std::string context = "import bundle " + import.bundle.sha256;
  Status valid = ValidateId("bundle", import.bundle.sha256);
  if (!valid.ok()) return valid.WithContext(context);
  std::lock_guard lock(write_mu_);
  Result<std::optional<std::string>> stored = engine_->Get(Table::kBundles, import.bundle.sha256);
  if (!stored.ok()) return stored.status().WithContext(context);
  // Before CheckImport: importing the same file again is a duplicate, not a
  // replay of its (now used) sequence number.
  if (stored->has_value()) return WriteOutcome::kDuplicate;
  if (Status checked = CheckImport(import); !checked.ok()) return checked.WithContext(context);
  KvBatch batch;
  uint64_t added = AddImport(import, batch);
  Status write = engine_->Write(batch, options_.sync_state);
  if (!write.ok()) return write.WithContext(context);
  last_event_seq_ += added;
  return WriteOutcome::kStored;
}

Result<BundleRecord> KvStore::GetBundle(std::string_view sha256) {
  ORCH_RETURN_IF_ERROR(ValidateId("bundle", sha256));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kBundles, sha256));
  if (!bytes) return NotFoundIn(Table::kBundles, sha256);
  return DecodeBundle(DescribeKey(Table::kBundles, sha256), *bytes);
}

Result<SignerRecord> KvStore::GetSigner(std::string_view signer) {
  ORCH_RETURN_IF_ERROR(ValidateId("signer", signer));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> bytes, engine_->Get(Table::kSigners, signer));
  if (!bytes) return NotFoundIn(Table::kSigners, signer);
  return DecodeSigner(DescribeKey(Table::kSigners, signer), *bytes);
}

// --- events ---

Result<uint64_t> KvStore::AppendEvent(const EventRecord& event) {
  std::lock_guard lock(write_mu_);
  KvBatch batch;
  AddEvents(batch, {event});
  Status write = engine_->Write(batch, options_.sync_state);
  if (!write.ok()) return write.WithContext("append event " + event.kind);
  return ++last_event_seq_;
}

Status KvStore::ScanEvents(uint64_t from_seq, const EventVisitor& visit) {
  Status inner;
  Status scan = engine_->Scan(
      Table::kEvents, "", EventKey(from_seq), [&](std::string_view key, std::string_view value) {
        Result<EventRecord> event = DecodeEvent(DescribeKey(Table::kEvents, key), value);
        if (!event.ok()) {
          inner = event.status();
          return false;
        }
        return visit(*event);
      });
  if (!scan.ok()) return scan.WithContext("scan events");
  return inner.WithContext("scan events");
}

// --- restart ---

template <typename Record, typename Decode>
Status KvStore::ScanTable(Table table, Decode decode, std::vector<Record>& out) {
  Status inner;
  Status scan = engine_->Scan(table, "", "", [&](std::string_view key, std::string_view value) {
    Result<Record> record = decode(DescribeKey(table, key), value);
    if (!record.ok()) {
      inner = record.status();
      return false;
    }
    out.push_back(std::move(*record));
    return true;
  });
  ORCH_RETURN_IF_ERROR(scan);
  return inner;
}

Result<StoreState> KvStore::LoadState() {
  StoreState state;
  {
    std::lock_guard lock(write_mu_);
    // Writers change it under the lock. The scans below run without it: reads go
    // straight to the engine, which allows concurrent reads.
    state.last_event_seq = last_event_seq_;
  }
  Status status = ScanTable(Table::kPlans, DecodePlan, state.plans);
  if (status.ok()) status = ScanTable(Table::kJobs, DecodeJob, state.jobs);
  if (status.ok()) status = ScanTable(Table::kRuns, DecodeRun, state.runs);
  if (!status.ok()) return status.WithContext("load state");
  return state;
}

Status KvStore::Sync() {
  std::lock_guard lock(write_mu_);
  return engine_->Sync();
}

}  // namespace orch::store
