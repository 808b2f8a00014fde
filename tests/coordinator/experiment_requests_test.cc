// The coordinator's answers about experiments and jobs: why a job waits, the
// per-job status, deterministic failures, retry, cancel, and resubmitting an
// edited spec.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders

// SmallSpec with an engine alternative: the cell needs "llama.cpp@b8390".
std::string SpecWithEngineCell(const std::string& name = "exp") {
  return SmallSpec(name, 1) + "\n[alternatives]\nengine = [\"llama.cpp@b8390\"]\n";
}

const protocol::JobStatus* JobOfCell(const protocol::StatusReply& status, const std::string& cell) {
  for (const protocol::JobStatus& job : status.jobs) {
    if (job.cell == cell) return &job;
  }
  return nullptr;
}

std::vector<protocol::Assign> Assigns(ScriptedPeer& agent) {
  return OfKind<protocol::Assign>(agent.Take());
}

// A RunFinished summary as the agent writes it for a driver's typed error.
std::string DriverErrorSummary(const std::string& code) {
  return R"({"driver":"d","error":{"code":")" + code +
         R"(","message":"ctx 8 is smaller than the 16 positions"}})";
}

TEST(PendingJobsTest, AJobNoAgentOffersTheEngineForSaysSoAndIsUnrunnable) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SpecWithEngineCell()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::StatusReply status = h.Ask<protocol::StatusReply>(protocol::StatusRequest{});
  ASSERT_THAT(status.experiments, SizeIs(1));
  EXPECT_EQ(status.experiments[0].unrunnable, 1u);
  const protocol::JobStatus* cell = JobOfCell(status, "engine=llama.cpp@b8390");
  ASSERT_NE(cell, nullptr) << "unrunnable jobs are listed without --jobs";
  EXPECT_FALSE(cell->runnable);
  EXPECT_EQ(cell->state, "pending");
  EXPECT_THAT(cell->reason, HasSubstr("no connected agent offers engine llama.cpp@b8390"));
  EXPECT_THAT(cell->reason, HasSubstr("offered: llama.cpp@v0.4.0"));
}

TEST(PendingJobsTest, WithNoAgentTheReasonSaysNoneIsConnected) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_EQ(status.jobs[0].reason, "no agent connected");
  EXPECT_FALSE(status.jobs[0].runnable);
}

TEST(PendingJobsTest, AJobWaitingForABusyAgentIsRunnableAndSaysWhatItWaitsFor) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 2)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(2));
  EXPECT_EQ(status.experiments[0].unrunnable, 0u);
  const protocol::JobStatus& running =
      status.jobs[0].state == "assigned" ? status.jobs[0] : status.jobs[1];
  const protocol::JobStatus& waiting =
      status.jobs[0].state == "assigned" ? status.jobs[1] : status.jobs[0];
  EXPECT_EQ(running.agent_id, "agent-1");
  EXPECT_EQ(running.host, "host-agent-1");
  EXPECT_EQ(running.cell, "baseline");
  EXPECT_TRUE(waiting.runnable);
  EXPECT_EQ(waiting.reason, "waiting for a free slot on agent-1");
}

TEST(PendingJobsTest, AJobEveryCapableAgentRefusedNamesTheirReasons) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = Assigns(*agent).at(0);
  agent->Finish(assign.run_id, 0, protocol::RunStatus::kFailed,
                "agent agent-1 refused the run: spool: disk full");
  h.Pump();
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_FALSE(status.jobs[0].runnable);
  EXPECT_THAT(status.jobs[0].reason,
              HasSubstr("refused by every capable agent: agent-1: agent agent-1 "
                        "refused the run: spool: disk full"));
}

TEST(PendingJobsTest, AgentsReportTheirPositionsPerSecond) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = Assigns(*agent).at(0);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0, 8);
  h.Pump();
  h.Advance(milliseconds(2000));
  agent->Chunk(assign.run_id, 1, 8);
  h.Pump();
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.agents, SizeIs(1));
  EXPECT_DOUBLE_EQ(status.agents[0].positions_per_second, 16 / 2.0);
  EXPECT_EQ(status.jobs[0].state, "running");
  EXPECT_EQ(status.jobs[0].elapsed, milliseconds(2000));
}

// Submits SmallSpec, registers agent-1, and has its driver fail the one run
// with the typed error `code`.
std::unique_ptr<ScriptedPeer> FailTheRunWith(CoordinatorHarness& h, const std::string& code,
                                             const std::string& message) {
  EXPECT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = Assigns(*agent).at(0);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Finish(assign.run_id, 0, protocol::RunStatus::kFailed,
                "driver d: " + code + ": " + message, DriverErrorSummary(code));
  h.Pump();
  return agent;
}

TEST(FailureTest, ADriversTypedRefusalFailsTheJobAtOnceWithoutRetry) {
  CoordinatorHarness h;
  auto agent = FailTheRunWith(h, "invalid_job", "ctx too small");
  EXPECT_THAT(Assigns(*agent), SizeIs(0)) << "a deterministic failure is not retried";
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_EQ(status.jobs[0].state, "failed");
  EXPECT_EQ(status.jobs[0].attempts, 1);
  EXPECT_THAT(status.jobs[0].reason, HasSubstr("invalid_job: ctx too small"));
  EXPECT_THAT(status.jobs[0].reason, HasSubstr("not retried"));
  EXPECT_EQ(status.experiments[0].failed, 1u);
}

TEST(FailureTest, AnEngineErrorIsStillRetried) {
  CoordinatorHarness h;
  auto agent = FailTheRunWith(h, "engine_error", "out of memory");
  EXPECT_THAT(Assigns(*agent), SizeIs(1));
}

TEST(ExperimentTest, CancelledJobsAreCountedApartFromFailedAndCanBeRetried) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 2)).ok);
  protocol::CommandReply cancelled =
      h.Ask<protocol::CommandReply>(protocol::CancelExperiment{"exp"});
  EXPECT_TRUE(cancelled.ok);
  protocol::StatusReply status = h.AllJobs();
  EXPECT_EQ(status.experiments[0].cancelled, 2u);
  EXPECT_EQ(status.experiments[0].failed, 0u);
  EXPECT_TRUE(status.experiments[0].eta_known) << "nothing left: the ETA is known (0)";

  protocol::CommandReply failed_only =
      h.Ask<protocol::CommandReply>(protocol::Retry{"exp", true, false});
  EXPECT_THAT(failed_only.message, HasSubstr("0 jobs queued again"));
  protocol::CommandReply retried =
      h.Ask<protocol::CommandReply>(protocol::Retry{"exp", false, true});
  EXPECT_TRUE(retried.ok);
  EXPECT_THAT(retried.message, HasSubstr("2 jobs queued again"));
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  EXPECT_THAT(Assigns(*agent), SizeIs(1));
}

TEST(ExperimentTest, RetryOfAFailedJobGivesItAFreshBudget) {
  CoordinatorOptions options = TestOptions();
  options.retry_budget = 1;
  CoordinatorHarness h(options);
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign first = Assigns(*agent).at(0);
  agent->Send(protocol::RunStarted{first.run_id});
  agent->Finish(first.run_id, 0, protocol::RunStatus::kFailed, "crashed");
  h.Pump();
  ASSERT_EQ(h.AllJobs().jobs[0].state, "failed");
  EXPECT_TRUE(h.Ask<protocol::CommandReply>(protocol::Retry{"exp", true, false}).ok);
  protocol::Assign again = Assigns(*agent).at(0);
  EXPECT_EQ(again.job_id, first.job_id);
  EXPECT_NE(again.run_id, first.run_id);
}

TEST(ExperimentTest, UnknownEtaIsNotKnownWhileNothingHasFinished) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  EXPECT_FALSE(h.AllJobs().experiments[0].eta_known);
}

// Submits a one-job experiment "exp" and runs its job to success on agent-1; returns
// the Assign it ran.
protocol::Assign RunTheOnlyJob(CoordinatorHarness& h) {
  EXPECT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = Assigns(*agent).at(0);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0);
  agent->Finish(assign.run_id, 1);
  h.Pump();
  return assign;
}

TEST(ExperimentTest, AnEditedSpecAddsItsNewJobsAndKeepsFinishedOnes) {
  CoordinatorHarness h;
  RunTheOnlyJob(h);
  ASSERT_EQ(h.AllJobs().experiments[0].succeeded, 1u);

  protocol::CommandReply edited = h.Submit(SpecWithEngineCell("exp"));
  EXPECT_TRUE(edited.ok) << edited.message;
  EXPECT_THAT(edited.message, HasSubstr("1 added"));
  protocol::StatusReply status = h.AllJobs();
  EXPECT_EQ(status.experiments[0].total, 2u);
  EXPECT_EQ(status.experiments[0].succeeded, 1u);
  EXPECT_EQ(status.experiments[0].pending, 1u);
  EXPECT_EQ(h.store().ListJobs("exp")->size(), 2u);
  EXPECT_THAT(h.store().GetPlan("exp")->json, HasSubstr("llama.cpp@b8390"));
}

TEST(ExperimentTest, AFinishedJobNamesTheAgentAndRunThatRanIt) {
  CoordinatorHarness h;
  protocol::Assign assign = RunTheOnlyJob(h);
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_EQ(status.jobs[0].state, "succeeded");
  EXPECT_EQ(status.jobs[0].agent_id, "agent-1");
  EXPECT_EQ(status.jobs[0].run_id, assign.run_id);
}

// A finished job says how long its run took (assignment to result), not 0, and still
// does after the coordinator restarts from its store.
TEST(ExperimentTest, AFinishedJobShowsHowLongItsRunTookAcrossARestart) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = Assigns(*agent).at(0);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0);
  h.Pump();
  h.Advance(milliseconds(3500));
  agent->Finish(assign.run_id, 1);
  h.Pump();
  h.Advance(milliseconds(60'000));  // later status calls do not add to it
  protocol::StatusReply status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_EQ(status.jobs[0].state, "succeeded");
  EXPECT_EQ(status.jobs[0].elapsed, milliseconds(3500));
  h.Restart();
  status = h.AllJobs();
  ASSERT_THAT(status.jobs, SizeIs(1));
  EXPECT_EQ(status.jobs[0].elapsed, milliseconds(3500));
  EXPECT_EQ(status.jobs[0].agent_id, "agent-1");
  EXPECT_EQ(status.jobs[0].run_id, assign.run_id);
}

TEST(ExperimentTest, AnEditedSpecSurvivesARestartOfTheCoordinator) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  ASSERT_TRUE(h.Submit(SpecWithEngineCell("exp")).ok);
  h.Restart();
  EXPECT_EQ(h.AllJobs().experiments[0].total, 2u);
}

TEST(ExperimentTest, JobsDroppedFromAnEditedSpecAreCancelledAndForgotten) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 3)).ok);
  protocol::CommandReply edited = h.Submit(SmallSpec("exp", 1));
  EXPECT_TRUE(edited.ok) << edited.message;
  EXPECT_THAT(edited.message, HasSubstr("2 no longer in the spec dropped"));
  protocol::StatusReply status = h.AllJobs();
  EXPECT_EQ(status.experiments[0].total, 1u);
  EXPECT_THAT(status.jobs, SizeIs(1));
}

TEST(ExperimentTest, AnEditedBaselineIsRefusedAndNothingChanges) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  std::string spec = SmallSpec("exp", 1);
  spec.replace(spec.find("quant = \"q4_0\""), 14, "quant = \"q8_0\"");
  protocol::CommandReply refused = h.Submit(spec);
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.message, HasSubstr("already exists with another baseline"));
  EXPECT_THAT(refused.message, HasSubstr("new experiment name"));
  EXPECT_EQ(h.AllJobs().experiments[0].total, 1u);
}

TEST(ExperimentTest, AnEditedModelIsRefused) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  std::string spec = SmallSpec("exp", 1);
  spec.replace(spec.find("seed=7"), 6, "seed=8");
  protocol::CommandReply refused = h.Submit(spec);
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.message, HasSubstr("another model"));
}

}  // namespace
}  // namespace orch::coordinator
