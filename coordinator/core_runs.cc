// CoordinatorCore's runs (coordinator_core.h): whose results are taken, and what a run's
// end means for its job.
#include <string>

#include "coordinator/coordinator_core.h"

namespace orch::coordinator {
namespace {

using store::JobState;
using store::RunState;

}  // namespace

// --- who may say what ---

bool CoordinatorCore::FromItsAgent(const RunEntry& run, const std::string& peer,
                                   const char* what) const {
  if (run.agent_id == peer) return true;
  Log("refusing " + std::string(what) + " of run " + run.id + " from " + peer +
      ": the run belongs to agent " + run.agent_id);
  return false;
}

// Why a RunFinished{succeeded} cannot be true: no digest at all, or more
// chunks than the job has positions (each chunk holds at least one). Empty
// when plausible.
std::string CoordinatorCore::ImplausibleSuccess(const RunEntry& run,
                                                const protocol::RunFinished& finished) const {
  if (finished.status != protocol::RunStatus::kSucceeded) return "";
  if (finished.chunk_count == 0) {
    return "agent " + run.agent_id + " reported success without any digest; refused";
  }
  const JobEntry* job = jobs_.Find(run.job_id);
  if (job == nullptr) return "";
  const ParsedPlan& plan = catalog_.plan(job->plan);
  std::uint64_t limit = plan.workloads[plan.jobs[job->index].workload].MostPositions();
  if (limit == 0 || finished.chunk_count <= limit) return "";
  return "agent " + run.agent_id + " reported " + std::to_string(finished.chunk_count) +
         " chunks for a job of at most " + std::to_string(limit) + " positions; refused";
}

// --- outcomes ---

void CoordinatorCore::RunFailed(RunEntry& run, RunState state, const std::string& reason,
                                Millis now, Effects& out, Retry retry) {
  bool was_in_flight = run.InFlight();
  runs_.End(run, state, now);
  NoteFailure(run.id, reason);
  store::StateChange change;
  // Other end states came from the agent and were written with its RunFinished
  // (FinishRunEffect); a lost run has no such write, so it is made here.
  if (was_in_flight && state == RunState::kLost) {
    change.run = run.ToRecord();
    change.events.push_back(Event(now, "run.lost", run.id, reason));
  }
  JobEntry* job = jobs_.Find(run.job_id);
  // A run that is no longer its job's current one (a late result) leaves the job
  // alone.
  if (job != nullptr && job->current_run == run.id && !job->Terminal()) {
    job->last_error = reason;
    if (retry == Retry::kNever) {
      job->state = JobState::kFailed;
      job->current_run.clear();
      job->last_error = reason + " (not retried: the same job fails the same way)";
      change.events.push_back(Event(now, "job.failed", job->id, job->last_error));
    } else if (job->attempts >= options_.retry_budget) {
      job->state = JobState::kFailed;
      job->current_run.clear();
      job->last_error = "retry budget of " + std::to_string(options_.retry_budget) +
                        " runs exhausted; last: " + reason;
      change.events.push_back(Event(now, "job.failed", job->id, job->last_error));
    } else {
      jobs_.Requeue(*job);
      change.events.push_back(Event(now, "job.requeued", job->id, reason));
    }
    change.job = job->ToRecord(PlanId(*job));
  }
  if (change.job || change.run) out.push_back(ApplyEffect{std::move(change)});
  if (was_in_flight) NoteIfDrained(run.agent_id, now, out);
}

void CoordinatorCore::NoteDuration(const JobEntry& job, Millis took) {
  if (job.plan >= durations_.size() || took < Millis(0)) return;
  CellTimes& times = durations_[job.plan][catalog_.plan(job.plan).jobs[job.index].cell];
  times.total += took;
  times.runs += 1;
}

void CoordinatorCore::JobSucceeded(JobEntry& job, RunEntry& run, Millis ended, Millis now,
                                   Effects& out) {
  job.state = JobState::kSucceeded;
  job.last_error.clear();
  NoteDuration(job, ended - run.assigned_at);
  store::StateChange change;
  change.job = job.ToRecord(PlanId(job));
  change.events.push_back(Event(now, "job.succeeded", job.id, run.id));
  out.push_back(ApplyEffect{std::move(change)});
}

void CoordinatorCore::NoteFailure(const std::string& run_id, const std::string& reason) {
  Log(reason);
  recent_failures_.push_front(run_id + ": " + reason);
  while (recent_failures_.size() > options_.recent_failures) recent_failures_.pop_back();
}

}  // namespace orch::coordinator
