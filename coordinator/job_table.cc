#include "coordinator/job_table.h"

#include "coordinator/matchmaker.h"

namespace orch::coordinator {

void CountJob(store::JobState state, bool runnable, protocol::ExperimentProgress& p) {
  switch (state) {
    case store::JobState::kSucceeded:
      ++p.succeeded;
      break;
    case store::JobState::kAssigned:
    case store::JobState::kRunning:
      ++p.running;
      break;
    case store::JobState::kFailed:
      ++p.failed;
      break;
    case store::JobState::kCancelled:
      ++p.cancelled;
      break;
    case store::JobState::kPending:
    // A lost job is requeued on restore: it counts as pending.
    case store::JobState::kLost:
      ++p.pending;
      p.unrunnable += runnable ? 0 : 1;
      break;
  }
}

JobTable::JobTable(const JobTable& other) { *this = other; }

JobTable& JobTable::operator=(const JobTable& other) {
  if (this == &other) return *this;
  jobs_ = other.jobs_;
  queue_by_key_ = other.queue_by_key_;
  queues_.clear();
  queues_.reserve(other.queues_.size());
  for (const Queue& queue : other.queues_) {
    Queue& copy = queues_.emplace_back(Queue{queue.needs, {}});
    for (const JobEntry* job : queue.jobs) copy.jobs.push_back(&jobs_.at(job->id));
  }
  return *this;
}

store::JobRecord JobEntry::ToRecord(const std::string& experiment) const {
  store::JobRecord record;
  record.id = id;
  record.experiment = experiment;
  record.state = state;
  record.attempts = attempts;
  record.last_error = last_error;
  record.current_run_id = current_run;
  record.submitted_at_ms = submitted_at_ms;
  return record;
}

bool JobTable::Add(JobEntry entry, const protocol::Requirements& needs) {
  // Every job gets its queue, pending or not, so that Requeue can put it back
  // later.
  entry.queue = QueueFor(needs);
  auto [it, added] = jobs_.try_emplace(entry.id, std::move(entry));
  if (added && it->second.state == store::JobState::kPending) {
    queues_[it->second.queue].jobs.push_back(&it->second);
  }
  return added;
}

JobEntry* JobTable::Find(std::string_view id) {
  auto it = jobs_.find(std::string(id));
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobEntry* JobTable::Find(std::string_view id) const {
  auto it = jobs_.find(std::string(id));
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobTable::Requeue(JobEntry& job) {
  job.state = store::JobState::kPending;
  job.current_run.clear();
  // An older entry of the job may still be queued (a pending job cancelled, then
  // retried): whichever entry is reached second finds the job no longer pending
  // and is skipped as stale.
  queues_[job.queue].jobs.push_back(&job);
}

// Queue entries point at the entry, so they go first: a linear pass over one queue, for
// a job dropped from an edited plan (rare next to dispatch, which never searches).
void JobTable::Remove(std::string_view id) {
  auto it = jobs_.find(std::string(id));
  if (it == jobs_.end()) return;
  std::erase(queues_[it->second.queue].jobs, &it->second);
  jobs_.erase(it);
}

std::uint32_t JobTable::QueueFor(const protocol::Requirements& needs) {
  std::string key = RequirementKey(needs);
  auto it = queue_by_key_.find(key);
  if (it != queue_by_key_.end()) return it->second;
  // Queues are never removed, so JobEntry::queue indices stay valid.
  auto index = static_cast<std::uint32_t>(queues_.size());
  queues_.push_back({needs, {}});
  queue_by_key_.emplace(std::move(key), index);
  return index;
}

}  // namespace orch::coordinator
