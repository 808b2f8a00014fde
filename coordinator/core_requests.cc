// CoordinatorCore: requests from the CLI (Submit, Cancel, Drain, StatusRequest)
// and the rebuild from the store after a restart. Events from agents are in
// coordinator_core.cc.
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "coordinator/coordinator_core.h"

namespace orch::coordinator {
namespace {

using store::JobState;
using store::RunState;

void Reply(Effects& out, const std::string& peer, bool ok,
           std::string message) {
  out.push_back(
      SendEffect{peer, protocol::CommandReply{ok, std::move(message)}});
}

}  // namespace

void CoordinatorCore::OnSubmit(const std::string& peer,
                               const protocol::Submit& submit, Effects& out) {
  Result<ParsedPlan> parsed = ParsePlanJson(submit.plan_json);
  if (!parsed.ok()) {
    Reply(out, peer, false, "submit refused: " + parsed.status().message());
    return;
  }
  const ParsedPlan* existing = catalog_.Find(parsed->experiment);
  if (existing != nullptr && existing->json_sha256 != parsed->json_sha256) {
    Reply(out, peer, false,
          "submit refused: experiment " + parsed->experiment +
              " already exists with another plan; rename the experiment");
    return;
  }
  std::string message = "experiment " + parsed->experiment + ": " +
                        std::to_string(parsed->jobs.size()) + " jobs";
  PutPlanEffect effect{ToPlanRecord(*parsed, submit.plan_json),
                       ToJobRecords(*parsed), peer, ""};
  if (existing != nullptr) {
    effect.ok_message = message + ", already submitted";
  } else {
    effect.ok_message = message + ", submitted";
    std::uint32_t index = catalog_.Add(std::move(parsed).value());
    AddPlanJobs(index, nullptr);
  }
  out.push_back(std::move(effect));
}

void CoordinatorCore::AddPlanJobs(std::uint32_t plan_index,
                                  const std::vector<store::JobRecord>* stored) {
  const ParsedPlan& plan = catalog_.plan(plan_index);
  if (durations_.size() <= plan_index) durations_.resize(plan_index + 1);
  std::unordered_map<std::string_view, const store::JobRecord*> by_id;
  if (stored != nullptr) {
    for (const store::JobRecord& record : *stored)
      by_id.emplace(record.id, &record);
  }
  for (std::uint32_t i = 0; i < plan.jobs.size(); ++i) {
    JobEntry entry;
    entry.id = plan.jobs[i].id;
    entry.plan = plan_index;
    entry.index = i;
    auto it = by_id.find(entry.id);
    if (it != by_id.end()) {
      const store::JobRecord& record = *it->second;
      entry.state =
          record.state == JobState::kLost ? JobState::kPending : record.state;
      entry.attempts = record.attempts;
      entry.last_error = record.last_error;
      bool held = entry.state == JobState::kAssigned ||
                  entry.state == JobState::kRunning;
      if (held) entry.current_run = record.current_run_id;
    }
    jobs_.Add(std::move(entry), plan.requirements[plan.jobs[i].requirement]);
  }
}

void CoordinatorCore::OnCancel(const std::string& peer,
                               const protocol::Cancel& cancel, Millis now,
                               Effects& out) {
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
    store::StateChange change;
    if (RunEntry* run = runs_.Find(job->current_run);
        run != nullptr && run->InFlight()) {
      runs_.End(*run, RunState::kCancelled);
      change.run = run->ToRecord();
      const AgentEntry* agent = agents_.Find(run->agent_id);
      if (agent != nullptr &&
          agent->state != protocol::AgentState::kDisconnected) {
        out.push_back(SendEffect{agent->id, protocol::Cancel{run->id, ""}});
      }
    }
    job->state = JobState::kCancelled;
    job->current_run.clear();
    change.job = job->ToRecord(plan->experiment);
    change.events.push_back(Event(now, "job.cancelled", job->id, "by request"));
    out.push_back(ApplyEffect{std::move(change)});
    ++cancelled;
  }
  Reply(out, peer, true,
        "experiment " + plan->experiment + ": " + std::to_string(cancelled) +
            " jobs cancelled");
}

void CoordinatorCore::OnDrain(const std::string& peer,
                              const protocol::Drain& drain, Effects& out) {
  AgentEntry* agent = agents_.Find(drain.agent_id);
  if (agent == nullptr) {
    Reply(out, peer, false, "no agent " + drain.agent_id + " is registered");
    return;
  }
  if (agent->state != protocol::AgentState::kDisconnected) {
    agent->state = protocol::AgentState::kDraining;
    out.push_back(SendEffect{agent->id, drain});
  }
  Reply(out, peer, true,
        "agent " + agent->id + " drains: no new runs, " +
            std::to_string(runs_.CountOn(agent->id)) + " in flight");
}

protocol::StatusReply CoordinatorCore::Status(const std::string& experiment,
                                              Millis now) const {
  protocol::StatusReply reply;
  for (std::uint32_t p = 0; p < catalog_.size(); ++p) {
    const ParsedPlan& plan = catalog_.plan(p);
    if (!experiment.empty() && plan.experiment != experiment) continue;
    protocol::ExperimentProgress progress;
    progress.experiment = plan.experiment;
    progress.total = static_cast<std::uint32_t>(plan.jobs.size());
    for (const PlannedJob& planned : plan.jobs) {
      const JobEntry* job = jobs_.Find(planned.id);
      JobState state = job == nullptr ? JobState::kPending : job->state;
      switch (state) {
        case JobState::kSucceeded:
          ++progress.succeeded;
          break;
        case JobState::kAssigned:
        case JobState::kRunning:
          ++progress.running;
          break;
        case JobState::kFailed:
        case JobState::kCancelled:
          ++progress.failed;
          break;
        case JobState::kPending:
        case JobState::kLost:
          ++progress.pending;
          break;
      }
    }
    auto [total, count] = p < durations_.size()
                              ? durations_[p]
                              : std::pair<Millis, std::uint32_t>{};
    std::uint32_t left = progress.pending + progress.running;
    if (count > 0 && progress.running > 0 && left > 0) {
      progress.eta = total / count * left / progress.running;
    }
    reply.experiments.push_back(std::move(progress));
  }
  for (const auto& [id, agent] : agents_.all()) {
    reply.agents.push_back({id, agent.host, agent.capabilities.hardware_class,
                            agent.capabilities.engines, agent.state,
                            runs_.InFlightOn(id),
                            std::max(Millis(0), now - agent.last_heard)});
  }
  reply.recent_failures.assign(recent_failures_.begin(),
                               recent_failures_.end());
  return reply;
}

Effects CoordinatorCore::Restore(const store::StoreState& state, Millis now) {
  catalog_ = PlanCatalog();
  jobs_ = JobTable();
  runs_ = RunTable();
  durations_.clear();
  for (const store::PlanRecord& record : state.plans) {
    Result<ParsedPlan> parsed = ParsePlanJson(record.json);
    if (!parsed.ok()) {
      Log("restore: skipping plan " + record.id + ": " +
          parsed.status().message());
      continue;
    }
    AddPlanJobs(catalog_.Add(std::move(parsed).value()), &state.jobs);
  }
  for (const store::RunRecord& record : state.runs) {
    RunEntry run{
        record.id,
        record.job_id,
        record.agent_id,
        record.host_fingerprint_id,
        std::max(Millis(record.lease_expiry_ms), now + options_.agent_timeout),
        record.state,
        now};
    if (record.finished && run.InFlight()) run.state = RunState::kFailed;
    runs_.Add(std::move(run));
  }
  Effects out;
  for (const store::RunRecord& record : state.runs) {
    const JobEntry* job = jobs_.Find(record.job_id);
    if (record.finished && job != nullptr && job->current_run == record.id) {
      Effects decided = OnRunStored(record, now);
      out.insert(out.end(), decided.begin(), decided.end());
    }
  }
  // A job held by a run the store does not know cannot finish: run it again.
  for (auto& [id, job] : jobs_.all()) {
    bool held =
        job.state == JobState::kAssigned || job.state == JobState::kRunning;
    RunEntry* run = held ? runs_.Find(job.current_run) : nullptr;
    if (held && (run == nullptr || !run->InFlight())) jobs_.Requeue(job);
  }
  Dispatch(now, out);
  return out;
}

}  // namespace orch::coordinator
