// CoordinatorCore: the coordinator's decisions, as a pure function of events
// and time.
//
// Events in: a message from a peer, a peer's connection closing, a run record
// the store has just written, the passing of time (Tick), a restart (Restore).
// Effects out (coordinator/effects.h): messages to send and store writes to
// make, in order. The core changes its memory as if every effect succeeds; when
// a store write fails the shell rebuilds the core from the store with Restore.
// Time is an input: `now` on the coordinator's clock (milliseconds; the shell
// uses wall-clock time so that stored lease expiries stay meaningful across
// restarts). NextDeadline() says when Tick is next due.
//
// What it decides:
// - Hello: Welcome (or Reject: agent id that does not match its connection); re-adopts
//   the runs the agent lists in running_runs and releases its runs it does not
//   list.
// - Heartbeat: renews the leases of the runs it lists.
// - Assign: each pending job goes to a connected, non-draining agent with a free slot
//   whose capabilities meet the job's requirements (matchmaker.h) and that has
//   not refused it. Run ids: "<job id, 12 chars>-<attempt>-<salt><counter>". An
//   agent with idle warm sessions (Hello, Heartbeat) first gets the jobs that fit
//   them, within a bounded look-ahead that never starves a job (matchmaker.h).
// - RunStarted, DigestChunk, RunFinished: taken only from the connection of the
//   agent the run was assigned to; a RunFinished{succeeded} without digests or
//   with more chunks than the job has positions is stored as failed.
// - DigestChunk, RunFinished: stored under their own run id whatever became of the job
//   (a late result after a lease expired is kept apart); unknown run ids are
//   logged and ignored. A job succeeds when its current run is complete
//   (RunFinished and all its chunks stored). A failed, timed-out or lost run
//   requeues the job while attempts < retry_budget, otherwise fails it with the
//   reason. A RunFinished{failed} before RunStarted is a refusal: the job
//   avoids that agent from then on.
// - Lease expiry: the run is lost, its job requeued or failed as above.
// - Submit, StatusRequest, Cancel{experiment}, Drain: from the CLI; replies go to the
//   requesting peer.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "coordinator/agent_registry.h"
#include "coordinator/effects.h"
#include "coordinator/job_table.h"
#include "coordinator/options.h"
#include "coordinator/pending_reason.h"
#include "coordinator/plan_catalog.h"
#include "coordinator/run_table.h"
#include "protocol/messages.h"
#include "store/records.h"

namespace orch::coordinator {

class CoordinatorCore final {
 public:
  // `log` receives one line per notable event (unknown run ids, refusals, ...);
  // it must outlive the core.
  using LogSink = std::function<void(std::string_view line)>;
  CoordinatorCore(CoordinatorOptions options, LogSink log);

  // Replaces plans, jobs and runs with what the store holds. Agents stay
  // registered. Runs in flight keep their stored lease, extended to at least
  // now + agent_timeout so that their agents have time to reconnect and
  // re-adopt them. Jobs whose current run already finished are decided now.
  // Plans that no longer parse are logged and skipped.
  Effects Restore(const store::StoreState& state, Millis now);
  // A result bundle was stored (bundle/result_bundle.h): its runs (finished, without
  // their digests) and the jobs it completed, as stored. Only these change: the jobs
  // are no longer handed out. Nothing else is decided, so there are no effects.
  void OnImported(const std::vector<store::RunRecord>& runs,
                  const std::vector<store::JobRecord>& completed, Millis now);

  // By value: a Submit's plan text moves into the stored plan record rather than being
  // copied (a plan of 100,000 jobs is tens of MiB).
  Effects OnMessage(const std::string& peer, protocol::Message message, Millis now);
  Effects OnDisconnected(const std::string& peer, Millis now);
  Effects OnRunStored(const store::RunRecord& run, Millis now);
  Effects Tick(Millis now);

  // When Tick must next run; nullopt when nothing is waiting for time.
  std::optional<Millis> NextDeadline() const;

  const JobTable& jobs() const { return jobs_; }
  bool HasExperiment(const std::string& name) const { return catalog_.Find(name) != nullptr; }
  const AgentRegistry& agents() const { return agents_; }
  protocol::StatusReply Status(const protocol::StatusRequest& request, Millis now) const;

 private:
  void OnHello(const std::string& peer, const protocol::Hello& hello, Millis now, Effects& out);
  std::string WhyIdRefused(const protocol::Hello& hello, const std::string& peer) const;
  // Logs the registration and records it (and a changed driver quarantine) as events.
  void NoteRegistration(const protocol::Hello& hello, const std::string& quarantined_before,
                        Millis now, Effects& out);
  void OnHeartbeat(const std::string& peer, const protocol::Heartbeat& beat, Millis now,
                   Effects& out);
  void OnRunStarted(const std::string& peer, const protocol::RunStarted& started, Millis now,
                    Effects& out);
  // Results are taken only from the agent the run was assigned to (its
  // connection's peer id); anything else is logged and dropped.
  bool FromItsAgent(const RunEntry& run, const std::string& peer, const char* what) const;
  std::string ImplausibleSuccess(const RunEntry& run, const protocol::RunFinished& finished) const;
  void OnChunk(const std::string& peer, const protocol::DigestChunk& chunk, Millis now,
               Effects& out);
  void OnFinished(const std::string& peer, const protocol::RunFinished& finished, Millis now,
                  Effects& out);
  void OnSubmit(const std::string& peer, protocol::Submit submit, Millis now, Effects& out);
  void OnCancel(const std::string& peer, const protocol::CancelExperiment& cancel, Millis now,
                Effects& out);
  void OnDrain(const std::string& peer, const protocol::Drain& drain, Millis now, Effects& out);
  void OnRetry(const std::string& peer, const protocol::Retry& retry, Millis now, Effects& out);
  // Ends `job` as cancelled (its run, if in flight, too; its agent is told).
  void CancelJob(JobEntry& job, const std::string& experiment, const std::string& why, Millis now,
                 Effects& out);
  // A resubmitted plan with other jobs: adopts the new plan, keeps the jobs it
  // still lists, adds the new ones, forgets (and cancels) the ones it drops.
  void ReplacePlan(const std::string& peer, const ParsedPlan& existing, ParsedPlan parsed,
                   std::string plan_json, Millis now, Effects& out);
  // Pending reasons per requirement queue, computed once per StatusReply.
  using ReasonCache = std::unordered_map<std::uint32_t, PendingReason>;
  // The cache's entry for the job's queue, or, for a job some agent refused, its own
  // reason, written to `own`. A reference: the text is copied only for jobs listed.
  const PendingReason& WhyPending(const JobEntry& job, ReasonCache& cache,
                                  PendingReason& own) const;
  // Each experiment's counts and ETA, and the jobs the request lists, in the order of
  // the catalog and of each plan.
  void Progress(const protocol::StatusRequest& request, Millis now,
                protocol::StatusReply& reply) const;
  // The state `orch status` shows: drained once a drain left no run in flight.
  protocol::AgentState ShownState(const AgentEntry& agent) const;
  void SetEta(std::uint32_t plan, protocol::ExperimentProgress& progress) const;
  void FillJobStatus(const JobEntry& job, const PlannedJob& planned, const std::string& experiment,
                     Millis now, protocol::JobStatus& status) const;

  // Restore's reading of one stored run (`jobs`: the stored jobs).
  void RestoreRun(const store::RunRecord& record, const std::vector<store::JobRecord>& jobs,
                  Millis now);
  // `now`: the submit time of jobs not stored yet.
  void AddPlanJobs(std::uint32_t plan_index, const std::vector<store::JobRecord>* stored,
                   Millis now);
  void Dispatch(Millis now, Effects& out);
  void DispatchTo(AgentEntry& agent, Millis now, Effects& out);
  bool AnyPending() const;
  bool AssignOne(AgentEntry& agent, JobTable::Queue& queue, Millis now, Effects& out);
  bool AssignWarm(AgentEntry& agent, Millis now, Effects& out);
  std::vector<protocol::KeyValue> CoordinateOf(const JobEntry& job) const;
  void Assign(JobEntry& job, AgentEntry& agent, Millis now, Effects& out);
  std::int32_t FreeSlots(const AgentEntry& agent) const;
  void CancelStale(AgentEntry& agent, const std::vector<std::string>& running, Effects& out);
  // The run ended without success: requeue its job (kWhileBudgetLasts, while
  // attempts < retry_budget) or fail it, with `reason`.
  enum class Retry { kWhileBudgetLasts, kNever };
  void RunFailed(RunEntry& run, store::RunState state, const std::string& reason, Millis now,
                 Effects& out, Retry retry = Retry::kWhileBudgetLasts);
  // `ended`: when its result arrived (the run's duration for the ETA ends there).
  void JobSucceeded(JobEntry& job, RunEntry& run, Millis ended, Millis now, Effects& out);
  // Counts a succeeded run of `job` that took `took` towards its cell's ETA.
  void NoteDuration(const JobEntry& job, Millis took);
  void ReleaseUnlisted(const AgentEntry& agent, const std::vector<std::string>& listed,
                       bool same_process, Millis now, Effects& out);
  void NoteFailure(const std::string& run_id, const std::string& reason);
  store::EventRecord Event(Millis now, std::string kind, std::string subject,
                           std::string detail) const;
  // Appends an event that no job or run record comes with (an agent's or an
  // experiment's): an ApplyEffect of that event alone.
  void Record(Effects& out, Millis now, std::string kind, std::string subject,
              std::string detail) const;
  // A draining agent whose last run ended is drained: recorded once.
  void NoteIfDrained(const std::string& agent_id, Millis now, Effects& out);
  const std::string& PlanId(const JobEntry& job) const;
  void Log(const std::string& line) const { log_(line); }

  CoordinatorOptions options_;
  LogSink log_;
  PlanCatalog catalog_;
  JobTable jobs_;
  RunTable runs_;
  AgentRegistry agents_;
  // Agents that ran the stored runs (Restore): shown as never seen until they register.
  std::set<std::string, std::less<>> stored_agents_;
  std::deque<std::string> recent_failures_;  // newest first
  std::uint64_t next_run_ = 0;
  // Per experiment (plan index), per cell: sum and count of successful run durations
  // (assignment to result), for the ETA; rebuilt from the stored runs' times on Restore.
  struct CellTimes {
    Millis total{0};
    std::uint32_t runs = 0;
  };
  std::vector<std::map<std::string, CellTimes, std::less<>>> durations_;
};

}  // namespace orch::coordinator
