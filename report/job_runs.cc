#include "report/job_runs.h"

namespace orch::report {

bool Usable(const store::RunRecord& run) {
  return run.state == store::RunState::kSucceeded && run.Complete();
}

std::string ContributorOf(const store::RunRecord& run) {
  return run.contributor.empty() ? kLabContributor : run.contributor;
}

JobRuns::JobRuns(const std::vector<store::JobRecord>& jobs,
                 const std::vector<store::RunRecord>& runs) {
  for (const store::JobRecord& job : jobs) jobs_[job.id] = &job;
  for (const store::RunRecord& run : runs) runs_[run.job_id].push_back(&run);
}

const store::JobRecord* JobRuns::Job(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second;
}

const std::vector<const store::RunRecord*>& JobRuns::Runs(const std::string& job_id) const {
  static const std::vector<const store::RunRecord*> kNone;
  auto it = runs_.find(job_id);
  return it == runs_.end() ? kNone : it->second;
}

std::vector<const store::RunRecord*> JobRuns::UsableRuns(const std::string& job_id) const {
  std::vector<const store::RunRecord*> out;
  for (const store::RunRecord* run : Runs(job_id)) {
    if (Usable(*run)) out.push_back(run);
  }
  return out;
}

const store::RunRecord* JobRuns::Chosen(const std::string& job_id) const {
  const store::JobRecord* job = Job(job_id);
  if (job == nullptr) return nullptr;
  const store::RunRecord* chosen = nullptr;
  for (const store::RunRecord* run : UsableRuns(job_id)) {
    if (chosen == nullptr || run->id == job->current_run_id) chosen = run;
  }
  return chosen;
}

}  // namespace orch::report
