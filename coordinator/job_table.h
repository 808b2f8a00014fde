// JobTable: every job the coordinator knows, its state, and the queues of
// pending jobs.
//
// States follow store::JobState: pending -> assigned -> running -> succeeded |
// failed, with lost/failed runs sending a job back to pending while its retry
// budget lasts, and cancelled for jobs of a cancelled experiment. Pending jobs
// wait in one FIFO queue per distinct requirement (matchmaker.h), so dispatch
// looks at each kind of job once per agent rather than at every job. Queues are
// cleaned lazily: an entry whose job left pending is skipped when reached.
// Pure: no clock, no store.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/messages.h"
#include "store/records.h"

namespace orch::coordinator {

// Adds a job in `state` to `progress`: assigned and running count as running, lost
// as pending (it is requeued on restore); a pending one no connected agent can run
// (`runnable` false) also as unrunnable. `orch status` and the stored experiments
// that `orch experiments --data-dir` lists count the same way.
void CountJob(store::JobState state, bool runnable, protocol::ExperimentProgress& progress);

// An agent's refusal of a job (RunFinished{failed} before RunStarted).
struct Refusal {
  std::string agent;
  std::string reason;
};

struct JobEntry {
  std::string id;
  std::uint32_t plan = 0;   // index into PlanCatalog
  std::uint32_t index = 0;  // index into that plan's jobs
  std::uint32_t queue = 0;  // its pending queue
  store::JobState state = store::JobState::kPending;
  std::int32_t attempts = 0;  // runs started so far
  std::string last_error;
  std::string current_run;           // empty when no run holds the job
  std::vector<Refusal> refusals;     // agents that refused it, first refusal each
  std::int64_t submitted_at_ms = 0;  // store::JobRecord::submitted_at_ms
  // Times a later job went first to fit an agent's warm session
  // (coordinator/matchmaker.h); not stored.
  std::uint32_t passed_over = 0;

  // Whether `agent` refused it.
  bool RefusedBy(const std::string& agent) const {
    return std::any_of(refusals.begin(), refusals.end(),
                       [&](const Refusal& r) { return r.agent == agent; });
  }
  bool Terminal() const {
    return state == store::JobState::kSucceeded || state == store::JobState::kFailed ||
           state == store::JobState::kCancelled;
  }
  store::JobRecord ToRecord(const std::string& experiment) const;
};

class JobTable final {
 public:
  JobTable() = default;
  // Queues point into the table: a copy points its queues at its own entries.
  JobTable(const JobTable& other);
  JobTable& operator=(const JobTable& other);
  JobTable(JobTable&&) = default;
  JobTable& operator=(JobTable&&) = default;

  // Adds a job (state as given); a pending one joins the queue for `needs`. A
  // job id already present is left as it is; returns false then.
  bool Add(JobEntry entry, const protocol::Requirements& needs);

  JobEntry* Find(std::string_view id);
  const JobEntry* Find(std::string_view id) const;

  // Moves a job back to pending at the end of its queue.
  void Requeue(JobEntry& job);
  // Forgets a job, its queue entries too. No-op for an unknown id.
  void Remove(std::string_view id);

  struct Queue {
    protocol::Requirements needs;
    // Entries of the table (a node's address is stable), not copies of job ids: 100,000
    // queued jobs would hold their ids a second time. May hold stale entries: a job no
    // longer pending, or queued twice (see above).
    std::deque<JobEntry*> jobs;
  };
  std::vector<Queue>& queues() { return queues_; }
  const std::vector<Queue>& queues() const { return queues_; }

  // Every job, in no particular order.
  const std::unordered_map<std::string, JobEntry>& all() const { return jobs_; }
  std::unordered_map<std::string, JobEntry>& all() { return jobs_; }
  std::size_t size() const { return jobs_.size(); }

 private:
  std::uint32_t QueueFor(const protocol::Requirements& needs);

  std::unordered_map<std::string, JobEntry> jobs_;
  std::vector<Queue> queues_;
  std::map<std::string, std::uint32_t, std::less<>> queue_by_key_;
};

}  // namespace orch::coordinator
