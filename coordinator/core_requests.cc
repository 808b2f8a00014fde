// CoordinatorCore: requests from the CLI (Submit, Cancel, Drain, StatusRequest)
// and the rebuild from the store after a restart. Events from agents are in
// coordinator_core.cc.
#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "coordinator/coordinator_core.h"

namespace orch::coordinator {
namespace {

using store::JobState;
using store::RunState;

void Reply(Effects& out, const std::string& peer, bool ok, std::string message) {
  out.push_back(SendEffect{peer, protocol::CommandReply{ok, std::move(message)}});
}

}  // namespace

void CoordinatorCore::OnSubmit(const std::string& peer, protocol::Submit submit, Millis now,
                               Effects& out) {
  Result<ParsedPlan> parsed = ParsePlanJson(submit.plan_json);
  if (!parsed.ok()) {
    Reply(out, peer, false, "submit refused: " + parsed.status().message());
    return;
  }
  // Ids hash the experiment name and were recomputed above, so only a hash
  // collision gets here; the store must never move a job to another plan.
  for (const PlannedJob& job : parsed->jobs) {
    const JobEntry* known = jobs_.Find(job.id);
    if (known != nullptr && PlanId(*known) != parsed->experiment) {
      Reply(out, peer, false,
            "submit refused: plan.jobs[].id " + job.id + " is a job of experiment " +
                PlanId(*known) +
                " (job ids hash the experiment name: this plan was not made "
                "by orch plan for " +
                parsed->experiment + ")");
      return;
    }
  }
  const ParsedPlan* existing = catalog_.Find(parsed->experiment);
  if (existing != nullptr && existing->json_sha256 != parsed->json_sha256) {
    return ReplacePlan(peer, *existing, std::move(parsed).value(), std::move(submit.plan_json), now,
                       out);
  }
  std::string message =
      "experiment " + parsed->experiment + ": " + std::to_string(parsed->jobs.size()) + " jobs";
  PutPlanEffect effect{ToPlanRecord(*parsed, std::move(submit.plan_json)),
                       ToJobRecords(*parsed, now.count()), peer, ""};
  // The same plan again is still written: PutPlan is idempotent (stored jobs keep
  // their state), and the reply goes out after the write like any submit's.
  if (existing != nullptr) {
    effect.ok_message = message + ", already submitted";
  } else {
    effect.ok_message = message + ", submitted";
    std::uint32_t index = catalog_.Add(std::move(parsed).value());
    AddPlanJobs(index, nullptr, now);
  }
  std::size_t jobs = effect.jobs.size();
  std::string experiment = effect.plan.experiment;
  out.push_back(std::move(effect));
  // After the plan's write: recorded only when that succeeded (effects.h).
  if (existing == nullptr) {
    Record(out, now, "plan.submitted", experiment, std::to_string(jobs) + " jobs");
  }
}

void CoordinatorCore::ReplacePlan(const std::string& peer, const ParsedPlan& existing,
                                  ParsedPlan parsed, std::string plan_json, Millis now,
                                  Effects& out) {
  const char* changed = existing.model != parsed.model         ? "model"
                        : existing.baseline != parsed.baseline ? "baseline"
                                                               : nullptr;
  if (changed != nullptr) {
    Reply(out, peer, false,
          "submit refused: experiment " + parsed.experiment + " already exists with another " +
              changed +
              "; an experiment's model and baseline cannot change (its "
              "finished runs were made with them): give the spec a new "
              "experiment name");
    return;
  }
  // Views into parsed.jobs: used only before `parsed` moves into the catalog.
  std::set<std::string_view> listed;
  for (const PlannedJob& job : parsed.jobs) listed.insert(job.id);
  std::vector<std::string> dropped;
  for (const PlannedJob& job : existing.jobs) {
    if (!listed.contains(job.id)) dropped.push_back(job.id);
  }
  int added = 0;
  for (const PlannedJob& job : parsed.jobs) added += jobs_.Find(job.id) == nullptr;
  PutPlanEffect effect{ToPlanRecord(parsed, std::move(plan_json)),
                       ToJobRecords(parsed, now.count()), peer, "",
                       /*replace=*/true};
  effect.ok_message =
      "experiment " + parsed.experiment + ": " + std::to_string(parsed.jobs.size()) +
      " jobs, updated: " + std::to_string(added) + " added, " + std::to_string(dropped.size()) +
      " no longer in the spec dropped, finished jobs kept";
  std::string experiment = parsed.experiment;
  out.push_back(std::move(effect));
  // After the plan's write: recorded only when that succeeded (effects.h).
  Record(out, now, "plan.edited", experiment,
         std::to_string(parsed.jobs.size()) + " jobs: " + std::to_string(added) + " added, " +
             std::to_string(dropped.size()) + " dropped");
  // A dropped job still in flight is cancelled (its agent told) before it is
  // forgotten; finished ones are forgotten as they are.
  for (const std::string& id : dropped) {
    JobEntry* job = jobs_.Find(id);
    if (job != nullptr && !job->Terminal())
      CancelJob(*job, experiment, "dropped from the edited spec", now, out);
    jobs_.Remove(id);
  }
  std::uint32_t index = catalog_.Add(std::move(parsed));
  AddPlanJobs(index, nullptr, now);
}

void CoordinatorCore::AddPlanJobs(std::uint32_t plan_index,
                                  const std::vector<store::JobRecord>* stored, Millis now) {
  const ParsedPlan& plan = catalog_.plan(plan_index);
  // One ETA entry per plan index; a replaced plan keeps its index (PlanCatalog::Add).
  // A replaced plan keeps its measured cells: its cells are named as before.
  if (durations_.size() <= plan_index) durations_.resize(plan_index + 1);
  std::unordered_map<std::string_view, const store::JobRecord*> by_id;
  if (stored != nullptr) {
    for (const store::JobRecord& record : *stored) by_id.emplace(record.id, &record);
  }
  for (std::uint32_t i = 0; i < plan.jobs.size(); ++i) {
    JobEntry entry;
    entry.id = plan.jobs[i].id;
    entry.plan = plan_index;
    entry.index = i;
    entry.submitted_at_ms = now.count();
    auto it = by_id.find(entry.id);
    if (it != by_id.end()) {
      const store::JobRecord& record = *it->second;
      // A lost job has no run any more: it waits for one like any pending job.
      entry.state = record.state == JobState::kLost ? JobState::kPending : record.state;
      entry.attempts = record.attempts;
      entry.submitted_at_ms = record.submitted_at_ms;
      entry.last_error = record.last_error;
      // A held job keeps its run id (Restore requeues it unless that run is still in
      // flight), and so does a finished one: status names its agent and duration.
      bool held = entry.state == JobState::kAssigned || entry.state == JobState::kRunning;
      if (held || entry.Terminal()) entry.current_run = record.current_run_id;
    }
    // A job kept by an edited plan keeps its state, attempts and queue; only where
    // it sits in the new plan changes.
    if (JobEntry* known = jobs_.Find(entry.id); known != nullptr) {
      known->plan = plan_index;  // a resubmitted, edited plan
      known->index = i;
      continue;
    }
    jobs_.Add(std::move(entry), plan.requirements[plan.jobs[i].requirements]);
  }
}

void CoordinatorCore::OnCancel(const std::string& peer, const protocol::CancelExperiment& cancel,
                               Millis now, Effects& out) {
  const ParsedPlan* plan = catalog_.Find(cancel.experiment);
  if (plan == nullptr) {
    Reply(out, peer, false,
          cancel.experiment.empty() ? "name an experiment to cancel"
                                    : "no experiment " + cancel.experiment);
    return;
  }
  int cancelled = 0;
  for (const PlannedJob& planned : plan->jobs) {
    JobEntry* job = jobs_.Find(planned.id);
    if (job == nullptr || job->Terminal()) continue;
    CancelJob(*job, plan->experiment, "by request", now, out);
    ++cancelled;
  }
  Record(out, now, "plan.cancelled", plan->experiment,
         std::to_string(cancelled) + " jobs cancelled by request");
  Reply(out, peer, true,
        "experiment " + plan->experiment + ": " + std::to_string(cancelled) +
            " jobs cancelled (orch retry " + plan->experiment + " --cancelled runs them again)");
}

void CoordinatorCore::CancelJob(JobEntry& job, const std::string& experiment,
                                const std::string& why, Millis now, Effects& out) {
  store::StateChange change;
  std::string drained_agent;  // whose run this ends: it may be drained now
  if (RunEntry* run = runs_.Find(job.current_run); run != nullptr && run->InFlight()) {
    runs_.End(*run, RunState::kCancelled, now);
    change.run = run->ToRecord();
    drained_agent = run->agent_id;
    const AgentEntry* agent = agents_.Find(run->agent_id);
    // A disconnected agent is told when it says Hello again: CancelStale cancels
    // the runs it lists that are no longer its.
    if (agent != nullptr && agent->state != protocol::AgentState::kDisconnected) {
      out.push_back(SendEffect{agent->id, protocol::CancelRun{run->id}});
    }
  }
  job.state = JobState::kCancelled;
  job.current_run.clear();
  job.last_error = "cancelled " + why;
  change.job = job.ToRecord(experiment);
  change.events.push_back(Event(now, "job.cancelled", job.id, why));
  out.push_back(ApplyEffect{std::move(change)});
  if (!drained_agent.empty()) NoteIfDrained(drained_agent, now, out);
}

void CoordinatorCore::OnRetry(const std::string& peer, const protocol::Retry& retry, Millis now,
                              Effects& out) {
  const ParsedPlan* plan = catalog_.Find(retry.experiment);
  if (plan == nullptr) {
    Reply(out, peer, false, "no experiment " + retry.experiment);
    return;
  }
  int again = 0;
  for (const PlannedJob& planned : plan->jobs) {
    JobEntry* job = jobs_.Find(planned.id);
    bool wanted = job != nullptr && ((retry.failed && job->state == JobState::kFailed) ||
                                     (retry.cancelled && job->state == JobState::kCancelled));
    if (!wanted) continue;
    // A retry by request gets the full retry budget again, and agents that refused
    // the job may take it now (the cause may have been fixed).
    job->attempts = 0;
    job->last_error.clear();
    job->refusals.clear();
    jobs_.Requeue(*job);
    store::StateChange change;
    change.job = job->ToRecord(plan->experiment);
    change.events.push_back(Event(now, "job.retried", job->id, "by request"));
    out.push_back(ApplyEffect{std::move(change)});
    ++again;
  }
  Reply(out, peer, true,
        "experiment " + plan->experiment + ": " + std::to_string(again) + " jobs queued again");
  Dispatch(now, out);
}

void CoordinatorCore::OnDrain(const std::string& peer, const protocol::Drain& drain, Millis now,
                              Effects& out) {
  AgentEntry* agent = agents_.Find(drain.agent_id);
  if (agent == nullptr) {
    Reply(out, peer, false, "no agent " + drain.agent_id + " is registered");
    return;
  }
  std::string in_flight = std::to_string(runs_.CountOn(agent->id)) + " in flight";
  if (!agent->drain_requested) {
    agent->drain_requested = true;
    Log("agent " + agent->id + " drains: " + in_flight);
    Record(out, now, "agent.draining", agent->id, in_flight);
  }
  // A disconnected agent is told when it says Hello again (OnHello).
  if (agent->state != protocol::AgentState::kDisconnected) {
    agent->state = protocol::AgentState::kDraining;
    out.push_back(SendEffect{agent->id, drain});
  }
  Reply(out, peer, true, "agent " + agent->id + " drains: no new runs, " + in_flight);
  NoteIfDrained(agent->id, now, out);
}

namespace {

// A lost job is requeued on restore: it waits like a pending one.
bool Waiting(JobState state) { return state == JobState::kPending || state == JobState::kLost; }

}  // namespace

const PendingReason& CoordinatorCore::WhyPending(const JobEntry& job, ReasonCache& cache,
                                                 PendingReason& own) const {
  auto busy = [this](std::string_view agent) { return runs_.CountOn(agent); };
  const protocol::Requirements& needs = jobs_.queues()[job.queue].needs;
  // Refusals are per job, so such a job is explained on its own; every other job
  // of a queue shares one answer (the cache).
  if (!job.refusals.empty()) {
    own = ExplainPending(needs, job.refusals, agents_, busy);
    return own;
  }
  auto [it, added] = cache.try_emplace(job.queue);
  if (added) it->second = ExplainPending(needs, {}, agents_, busy);
  return it->second;
}

void CoordinatorCore::FillJobStatus(const JobEntry& job, const PlannedJob& planned,
                                    const std::string& experiment, Millis now,
                                    protocol::JobStatus& status) const {
  status.job_id = job.id;
  status.experiment = experiment;
  status.cell = planned.cell;
  status.workload = catalog_.plan(job.plan).workloads[planned.workload].name;
  status.repeat = planned.repeat;
  status.state = store::JobStateName(job.state);
  status.attempts = job.attempts;
  const protocol::Requirements& needs = catalog_.plan(job.plan).requirements[planned.requirements];
  status.hardware = needs.hardware;
  status.gpus = needs.gpus;
  status.engine = needs.engine;
  if (job.state == JobState::kFailed || job.state == JobState::kCancelled)
    status.reason = job.last_error;
  // The run in flight, or for a job that ended the run that ended it (a finished job
  // names the agent that ran it); a pending job (waiting for a retry) names none.
  // elapsed: how long the run has run, or ran from assignment to its end.
  const RunEntry* run = runs_.Find(job.current_run);
  if (run == nullptr || (!run->InFlight() && !job.Terminal())) return;
  status.run_id = run->id;
  status.agent_id = run->agent_id;
  if (const AgentEntry* agent = agents_.Find(run->agent_id)) status.host = agent->host;
  if (run->InFlight()) {
    status.elapsed = std::max(Millis(0), now - run->assigned_at);
  } else if (run->ended_at > Millis(0)) {
    status.elapsed = std::max(Millis(0), run->ended_at - run->assigned_at);
  }
}

// Runs on every `orch status` and every refresh of `--watch`, so it is kept to one pass
// over the job table (not each plan's job ids looked up in it: a string hash each), and
// a pending job's reason is shared by reference, its text copied only for the jobs
// listed. At 100,000 jobs the two took a status from 7.4x to 2.5x the cost of merely
// visiting the jobs (bench/coordinator_bench, BM_Status100kJobs).
void CoordinatorCore::Progress(const protocol::StatusRequest& request, Millis now,
                               protocol::StatusReply& reply) const {
  // Where each asked-for plan's progress sits in the reply; -1: not asked for.
  std::vector<int> slot(catalog_.size(), -1);
  for (std::uint32_t p = 0; p < catalog_.size(); ++p) {
    const ParsedPlan& plan = catalog_.plan(p);
    if (!request.experiment.empty() && plan.experiment != request.experiment) continue;
    slot[p] = static_cast<int>(reply.experiments.size());
    protocol::ExperimentProgress& progress = reply.experiments.emplace_back();
    progress.experiment = plan.experiment;
    progress.total = static_cast<std::uint32_t>(plan.jobs.size());
  }
  struct Listed {
    std::uint32_t plan;
    std::uint32_t index;
    const JobEntry* job;
    PendingReason why;
  };
  std::vector<Listed> listed;
  ReasonCache cache;
  const PendingReason not_pending;
  PendingReason own;
  for (const auto& [id, job] : jobs_.all()) {
    if (job.plan >= slot.size() || slot[job.plan] < 0) continue;
    const PendingReason& why = Waiting(job.state) ? WhyPending(job, cache, own) : not_pending;
    CountJob(job.state, why.runnable, reply.experiments[slot[job.plan]]);
    bool running = job.state == JobState::kAssigned || job.state == JobState::kRunning;
    // By default only the jobs worth a look are listed: those running and those
    // pending that no agent can take.
    if (!request.all_jobs && !running && why.runnable) continue;
    listed.push_back({job.plan, job.index, &job, why});
  }
  std::sort(listed.begin(), listed.end(), [](const Listed& a, const Listed& b) {
    return a.plan != b.plan ? a.plan < b.plan : a.index < b.index;
  });
  // One reply must fit in a frame: the first kMaxStatusJobs in plan order, the rest counted.
  if (listed.size() > protocol::kMaxStatusJobs) {
    reply.jobs_omitted = static_cast<std::uint32_t>(listed.size() - protocol::kMaxStatusJobs);
    listed.resize(protocol::kMaxStatusJobs);
  }
  reply.jobs.reserve(reply.jobs.size() + listed.size());
  for (Listed& entry : listed) {
    const ParsedPlan& plan = catalog_.plan(entry.plan);
    protocol::JobStatus& status = reply.jobs.emplace_back();
    FillJobStatus(*entry.job, plan.jobs[entry.index], plan.experiment, now, status);
    if (Waiting(entry.job->state)) status.reason = std::move(entry.why.text);
    status.runnable = entry.why.runnable;
  }
  for (std::uint32_t p = 0; p < catalog_.size(); ++p) {
    if (slot[p] >= 0) SetEta(p, reply.experiments[slot[p]]);
  }
}

namespace {

// The cells of an experiment's jobs still to do, and their count per cell.
using EtaCellsLeft = std::map<std::string_view, std::uint32_t>;

}  // namespace

// ETA: the jobs left, each at the mean duration of its cell's succeeded runs (a cell
// not yet measured: at the mean of every measured run of the experiment), over the runs
// going on in parallel now. Unknown before a first success or while nothing runs. Says
// what it rests on: the runs and cells measured and the cells left that are not.
void CoordinatorCore::SetEta(std::uint32_t plan, protocol::ExperimentProgress& progress) const {
  std::uint32_t left = progress.pending + progress.running;
  if (left == 0) {
    progress.eta_known = true;  // done: nothing left
    return;
  }
  if (plan >= durations_.size()) return;
  const auto& cells = durations_[plan];
  CellTimes all;
  for (const auto& [cell, times] : cells) {
    all.total += times.total;
    all.runs += times.runs;
  }
  progress.eta_runs = all.runs;
  progress.eta_cells = static_cast<std::uint32_t>(cells.size());
  EtaCellsLeft cells_left;
  const ParsedPlan& parsed = catalog_.plan(plan);
  for (const PlannedJob& planned : parsed.jobs) {
    const JobEntry* job = jobs_.Find(planned.id);
    bool to_do = job != nullptr && (Waiting(job->state) || job->state == JobState::kAssigned ||
                                    job->state == JobState::kRunning);
    if (to_do) cells_left[planned.cell] += 1;
  }
  Millis work{0};
  for (const auto& [cell, jobs] : cells_left) {
    auto measured = cells.find(cell);
    if (measured == cells.end()) {
      progress.eta_cells_unmeasured += 1;
      if (all.runs > 0) work += all.total / all.runs * jobs;
    } else {
      work += measured->second.total / measured->second.runs * jobs;
    }
  }
  if (all.runs > 0 && progress.running > 0) {
    progress.eta = work / progress.running;
    progress.eta_known = true;
  }
}

protocol::StatusReply CoordinatorCore::Status(const protocol::StatusRequest& request,
                                              Millis now) const {
  protocol::StatusReply reply;
  Progress(request, now, reply);
  for (const auto& [id, agent] : agents_.all()) {
    protocol::AgentSummary& summary = reply.agents.emplace_back();
    summary = {id,
               agent.host,
               agent.capabilities.hardware_class,
               agent.capabilities.engines,
               ShownState(agent),
               runs_.InFlightOn(id),
               std::max(Millis(0), now - agent.last_heard)};
    summary.positions_per_second = agent.PositionsPerSecond(now);
    summary.slots = agent.capabilities.slots;
    summary.quarantined = agent.quarantined;
    summary.model_count = static_cast<std::uint32_t>(agent.capabilities.model_hashes.size());
    for (const std::string& run : summary.current_runs)
      summary.delivering_runs += agent.delivering.count(run);
  }
  for (const std::string& id : stored_agents_) {
    if (agents_.Find(id) != nullptr) continue;
    protocol::AgentSummary& summary = reply.agents.emplace_back();
    summary.agent_id = id;
    summary.state = protocol::AgentState::kNeverSeen;
  }
  std::sort(reply.agents.begin(), reply.agents.end(),
            [](const auto& a, const auto& b) { return a.agent_id < b.agent_id; });
  reply.recent_failures.assign(recent_failures_.begin(), recent_failures_.end());
  reply.security = options_.security;
  return reply;
}

protocol::AgentState CoordinatorCore::ShownState(const AgentEntry& agent) const {
  if (agent.drain_requested && runs_.CountOn(agent.id) == 0) return protocol::AgentState::kDrained;
  return agent.state;
}

}  // namespace orch::coordinator
