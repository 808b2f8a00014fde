// CoordinatorCore's restart and imports (coordinator_core.h): the state rebuilt from the
// store, and what a result bundle stored.
#include <algorithm>
#include <string>
#include <vector>

#include "coordinator/coordinator_core.h"

namespace orch::coordinator {
namespace {

using store::JobState;
using store::RunState;

// A succeeded run of a job still open whose RunFinished is stored but not
// every chunk it announced.
bool AwaitsChunks(const store::RunRecord& record, const std::vector<store::JobRecord>& jobs) {
  if (!record.finished || record.state != RunState::kSucceeded || record.Complete()) return false;
  // StoreState lists jobs in id order, so a binary search finds the run's job.
  auto job =
      std::lower_bound(jobs.begin(), jobs.end(), record.job_id,
                       [](const store::JobRecord& j, const std::string& id) { return j.id < id; });
  return job != jobs.end() && job->id == record.job_id && job->current_run_id == record.id &&
         (job->state == JobState::kAssigned || job->state == JobState::kRunning);
}

}  // namespace

void CoordinatorCore::RestoreRun(const store::RunRecord& record,
                                 const std::vector<store::JobRecord>& jobs, Millis now) {
  // assigned_at is `now` for records stored before assignment times were: ETA
  // durations of such runs in flight across a restart count from the restart.
  RunEntry run{record.id,
               record.job_id,
               record.agent_id,
               record.host_fingerprint_id,
               std::max(Millis(record.lease_expiry_ms), now + options_.agent_timeout),
               record.state,
               record.assigned_at_ms > 0 ? Millis(record.assigned_at_ms) : now};
  run.ended_at = Millis(record.ended_at_ms);
  if (!record.agent_id.empty()) stored_agents_.insert(record.agent_id);
  // The ETA's measured durations: the stored times of the runs that completed jobs
  // before the restart (the jobs Restore decides after reading every run count theirs
  // in JobSucceeded).
  const JobEntry* job = jobs_.Find(record.job_id);
  if (job != nullptr && job->state == JobState::kSucceeded && job->current_run == record.id &&
      record.state == RunState::kSucceeded && record.assigned_at_ms > 0 && record.ended_at_ms > 0) {
    NoteDuration(*job, Millis(record.ended_at_ms - record.assigned_at_ms));
  }
  if (record.finished && run.InFlight()) run.state = RunState::kFailed;
  if (AwaitsChunks(record, jobs)) {
    // Its RunFinished is stored, a chunk is not: it keeps a lease while its
    // agent's spool sends the chunk again, as it would without the restart.
    run.state = RunState::kRunning;
    run.finish_stored = true;
  }
  runs_.Add(std::move(run));
}

Effects CoordinatorCore::Restore(const store::StoreState& state, Millis now) {
  catalog_ = PlanCatalog();
  jobs_ = JobTable();
  runs_ = RunTable();
  durations_.clear();
  for (const store::PlanRecord& record : state.plans) {
    Result<ParsedPlan> parsed = ParsePlanJson(record.json, PlanSource::kStore);
    if (!parsed.ok()) {
      Log("restore: skipping plan " + record.experiment + ": " + parsed.status().message());
      continue;
    }
    AddPlanJobs(catalog_.Add(std::move(parsed).value()), &state.jobs, now);
  }
  for (const store::RunRecord& record : state.runs) RestoreRun(record, state.jobs, now);
  Effects out;
  // A second pass, once every run is loaded: OnRunStored may dispatch, and free
  // slots are counted from the runs in flight.
  for (const store::RunRecord& record : state.runs) {
    const JobEntry* job = jobs_.Find(record.job_id);
    if (record.finished && job != nullptr && job->current_run == record.id) {
      Effects decided = OnRunStored(record, now);
      out.insert(out.end(), decided.begin(), decided.end());
    }
  }
  // A job held by a run the store does not know cannot finish: run it again.
  for (auto& [id, job] : jobs_.all()) {
    bool held = job.state == JobState::kAssigned || job.state == JobState::kRunning;
    RunEntry* run = held ? runs_.Find(job.current_run) : nullptr;
    if (held && (run == nullptr || !run->InFlight())) jobs_.Requeue(job);
  }
  Dispatch(now, out);
  return out;
}

void CoordinatorCore::OnImported(const std::vector<store::RunRecord>& runs,
                                 const std::vector<store::JobRecord>& completed, Millis now) {
  // Finished before they came: no lease, no duration for the ETA; read as Restore reads
  // a stored run.
  for (const store::RunRecord& record : runs) {
    if (runs_.Find(record.id) == nullptr) RestoreRun(record, {}, now);
  }
  for (const store::JobRecord& record : completed) {
    JobEntry* job = jobs_.Find(record.id);
    if (job == nullptr) continue;
    // A pending job leaves its queue lazily (job_table.h).
    job->state = record.state;
    job->current_run = record.current_run_id;
    job->last_error = record.last_error;
  }
}

}  // namespace orch::coordinator
