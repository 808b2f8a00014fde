// CoordinatorCore's dispatch (coordinator_core.h, "Assign"): which pending job goes to
// which agent, warm sessions first.
#include <algorithm>
#include <utility>

#include "coordinator/coordinator_core.h"
#include "coordinator/matchmaker.h"

namespace orch::coordinator {
namespace {

using store::JobState;

}  // namespace

// --- dispatch ---

// Every agent: after what may give any agent work (new or requeued jobs, an agent
// registering, a tick). Events that only free a slot on one agent dispatch to that
// agent alone (DispatchTo): after a full pass no other agent can take a pending job,
// so asking all of them again on every heartbeat and result would cost
// O(agents) per message for nothing (1,000 agents: most of the coordinator's CPU).
void CoordinatorCore::Dispatch(Millis now, Effects& out) {
  if (!AnyPending()) return;
  for (auto& [id, agent] : agents_.all()) DispatchTo(agent, now, out);
}

void CoordinatorCore::DispatchTo(AgentEntry& agent, Millis now, Effects& out) {
  if (!agent.TakesWork() || FreeSlots(agent) <= 0) return;
  // Jobs that fit its idle warm sessions first, one per session.
  while (!agent.warm_sessions.empty() && FreeSlots(agent) > 0 && AssignWarm(agent, now, out)) {
  }
  if (FreeSlots(agent) <= 0) return;
  for (JobTable::Queue& queue : jobs_.queues()) {
    if (queue.jobs.empty() || !Satisfies(queue.needs, agent.capabilities)) continue;
    // Fills the agent from this queue before trying the next; queues keep the order
    // their requirements first appeared in, so earlier kinds of job go first.
    while (AssignOne(agent, queue, now, out)) {
    }
    if (FreeSlots(agent) <= 0) break;
  }
}

// The axis values of a job, as its Assign carries them.
std::vector<protocol::KeyValue> CoordinatorCore::CoordinateOf(const JobEntry& job) const {
  const ParsedPlan& plan = catalog_.plan(job.plan);
  std::vector<protocol::KeyValue> coordinate;
  const PlannedJob& planned = plan.jobs[job.index];
  if (planned.coordinate == plan_document::kNone) return coordinate;
  for (const auto& [axis, value] : plan.coordinates[planned.coordinate]) {
    coordinate.push_back({axis, plan_document::ScalarText(value)});
  }
  return coordinate;
}

// Assigns the agent the job its warm sessions prefer (matchmaker.h, PickWarmJob)
// among its first kWarmLookahead pending jobs in dispatch order; false when none.
bool CoordinatorCore::AssignWarm(AgentEntry& agent, Millis now, Effects& out) {
  struct Seen {
    JobTable::Queue* queue;
    std::size_t position;
    std::vector<protocol::KeyValue> coordinate;
  };
  // Only a queue of a warm session's engine and model can hold a job that fits: the
  // others' jobs are looked at (they are passed over) but their coordinates not built.
  auto may_fit = [&](const JobTable::Queue& queue) {
    return std::any_of(agent.warm_sessions.begin(), agent.warm_sessions.end(),
                       [&](const protocol::WarmSession& warm) {
                         return warm.engine == queue.needs.engine &&
                                warm.model == queue.needs.model;
                       });
  };
  bool any = false;
  for (const JobTable::Queue& queue : jobs_.queues()) {
    any = any ||
          (!queue.jobs.empty() && may_fit(queue) && Satisfies(queue.needs, agent.capabilities));
  }
  if (!any) return false;
  std::vector<Seen> seen;
  for (JobTable::Queue& queue : jobs_.queues()) {
    if (seen.size() >= kWarmLookahead) break;
    if (queue.jobs.empty() || !Satisfies(queue.needs, agent.capabilities)) continue;
    bool fits = may_fit(queue);
    for (std::size_t i = 0; i < queue.jobs.size() && seen.size() < kWarmLookahead; ++i) {
      const JobEntry& job = *queue.jobs[i];
      if (job.state != JobState::kPending || job.RefusedBy(agent.id)) continue;
      seen.push_back({&queue, i, fits ? CoordinateOf(job) : std::vector<protocol::KeyValue>{}});
    }
  }
  std::vector<WarmCandidate> candidates;
  for (const Seen& s : seen) {
    candidates.push_back({&s.queue->needs, &s.coordinate, s.queue->jobs[s.position]->passed_over});
  }
  std::optional<std::size_t> pick = PickWarmJob(candidates, agent.warm_sessions);
  if (!pick) return false;
  for (std::size_t i = 0; i < *pick; ++i) seen[i].queue->jobs[seen[i].position]->passed_over += 1;
  Seen& chosen = seen[*pick];
  JobEntry* job = chosen.queue->jobs[chosen.position];
  chosen.queue->jobs.erase(chosen.queue->jobs.begin() +
                           static_cast<std::ptrdiff_t>(chosen.position));
  // The session is busy with this job until the agent says otherwise.
  auto used = std::find_if(agent.warm_sessions.begin(), agent.warm_sessions.end(),
                           [&](const protocol::WarmSession& warm) {
                             return FitsWarmSession(chosen.queue->needs, chosen.coordinate, warm);
                           });
  if (used != agent.warm_sessions.end()) agent.warm_sessions.erase(used);
  Assign(*job, agent, now, out);
  return true;
}

bool CoordinatorCore::AnyPending() const {
  for (const JobTable::Queue& queue : jobs_.queues()) {
    if (!queue.jobs.empty()) return true;
  }
  return false;
}

// Assigns the first suitable job of `queue` to `agent`; false when the agent is
// full or the queue holds nothing it may take.
bool CoordinatorCore::AssignOne(AgentEntry& agent, JobTable::Queue& queue, Millis now,
                                Effects& out) {
  if (FreeSlots(agent) <= 0) return false;
  std::vector<JobEntry*> skipped;  // refused by this agent: kept in order
  bool assigned = false;
  while (!queue.jobs.empty() && !assigned) {
    JobEntry* job = queue.jobs.front();
    queue.jobs.pop_front();
    if (job->state != JobState::kPending) continue;  // stale entry
    if (job->RefusedBy(agent.id)) {
      skipped.push_back(job);
      continue;
    }
    Assign(*job, agent, now, out);
    assigned = true;
  }
  // Jobs this agent refused go back to the front, in order, so that other agents
  // still see the queue in FIFO order.
  queue.jobs.insert(queue.jobs.begin(), skipped.begin(), skipped.end());
  return assigned;
}

void CoordinatorCore::Assign(JobEntry& job, AgentEntry& agent, Millis now, Effects& out) {
  // Counted before the run id is built: the id carries the attempt number (from 1).
  job.attempts += 1;
  // Its last report does not know about this run yet.
  if (agent.free_hint > 0) agent.free_hint -= 1;
  RunEntry run;
  // The job id prefix keeps run ids short but readable in logs; the salt and the
  // counter make the id unique across coordinator lifetimes (options.h).
  run.id = job.id.substr(0, 12) + "-" + std::to_string(job.attempts) + "-" + options_.run_id_salt +
           std::to_string(++next_run_);
  run.job_id = job.id;
  run.agent_id = agent.id;
  run.host_fingerprint_id = agent.fingerprint_id;
  run.lease_expiry = now + options_.lease;
  run.assigned_at = now;
  job.state = JobState::kAssigned;
  job.current_run = run.id;

  const ParsedPlan& plan = catalog_.plan(job.plan);
  protocol::Assign assign = catalog_.MakeAssign(job.plan, plan.jobs[job.index]);
  assign.run_id = run.id;
  assign.lease = options_.lease;

  store::StateChange change;
  change.job = job.ToRecord(plan.experiment);
  change.run = run.ToRecord();
  change.events.push_back(Event(now, "job.assigned", job.id, run.id + " " + agent.id));
  runs_.Add(std::move(run));
  // Store first, then send: effects run in order, so an agent never runs a run
  // that a restarted coordinator would not know about.
  out.push_back(ApplyEffect{std::move(change)});
  out.push_back(SendEffect{agent.id, protocol::Message(std::move(assign))});
}

}  // namespace orch::coordinator
