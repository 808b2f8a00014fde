// The coordinator's and an agent's views of slots and runs converge after a
// pause, a lost lease or a coordinator restart: no job stalls, none is barred
// from an agent for a transient reason, no finished result is thrown away.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders
using std::chrono::milliseconds;

std::string RefusalText(std::string_view code) {
  return std::string(R"({"error": {"code": ")") + std::string(code) + R"("}})";
}

TEST(ConvergenceTest, AnAgentStillRunningARunItLostIsToldToCancelItAndGetsNoWorkMeanwhile) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 3)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(assigns, SizeIs(1));
  std::string stale = assigns[0].run_id;

  h.Advance(milliseconds(31000));  // paused past its lease: the run is lost
  ASSERT_EQ(h.store().GetRun(stale)->state, store::RunState::kLost);
  agent->Send(protocol::Heartbeat{"agent-1", {stale}, 0});  // resumed, still busy
  h.Pump();
  std::vector<protocol::Message> said = agent->Take();
  EXPECT_THAT(OfKind<protocol::Assign>(said), SizeIs(0)) << "its one slot is taken";
  EXPECT_THAT(OfKind<protocol::CancelRun>(said),
              ::testing::ElementsAre(protocol::CancelRun{stale}));
  agent->Send(protocol::Heartbeat{"agent-1", {stale}, 0});
  h.Pump();
  EXPECT_THAT(OfKind<protocol::CancelRun>(agent->Take()), SizeIs(0)) << "told once";

  agent->Finish(stale, 0, protocol::RunStatus::kCancelled, "cancelled");
  agent->Send(protocol::Heartbeat{"agent-1", {}, 1});
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1)) << "free again: work";
}

TEST(ConvergenceTest, ABusyRefusalNeitherBarsTheAgentNorSpendsTheRetryBudget) {
  CoordinatorHarness h;  // retry budget 3
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  std::string job;
  for (int round = 0; round < 5; ++round) {
    auto assigns = OfKind<protocol::Assign>(agent->Take());
    ASSERT_THAT(assigns, SizeIs(1)) << "round " << round;
    job = assigns[0].job_id;
    agent->Finish(assigns[0].run_id, 0, protocol::RunStatus::kFailed,
                  "agent agent-1 refused the run: no free slot",
                  RefusalText(protocol::kRefusedBusy));
    h.Pump();
    EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0))
        << "not offered again before the agent says it has room";
    agent->Send(protocol::Heartbeat{"agent-1", {}, 1});
    h.Pump();
  }
  EXPECT_EQ(h.store().GetJob(job)->state, store::JobState::kAssigned);
  EXPECT_EQ(h.store().GetJob(job)->attempts, 1) << "only the run in flight counts";
}

TEST(ConvergenceTest, APermanentRefusalBarsThatAgentOnlyAndSpendsNoBudget) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto first = h.Peer("agent-1");
  first->Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(first->Take());
  ASSERT_THAT(assigns, SizeIs(1));
  first->Finish(assigns[0].run_id, 0, protocol::RunStatus::kFailed,
                "agent agent-1 refused the run: its model is missing",
                RefusalText(protocol::kRefusedJob));
  first->Send(protocol::Heartbeat{"agent-1", {}, 1});
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(first->Take()), SizeIs(0)) << "barred";
  EXPECT_EQ(h.store().GetJob(assigns[0].job_id)->attempts, 0);
  auto second = h.Peer("agent-2");
  second->Hello();
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(second->Take()), SizeIs(1));
}

TEST(ConvergenceTest, AResultFinishedWhileTheCoordinatorWasDownIsKeptWhenTheAgentRegistersAgain) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(assigns, SizeIs(1));
  std::string run = assigns[0].run_id;

  h.Restart();  // the run finished meanwhile; its results wait in the spool
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.delivering_runs = {run};
  agent->Send(hello);  // Hello comes first, then the spool is sent again
  agent->Chunk(run, 0);
  agent->Finish(run, 1);
  h.Pump();
  EXPECT_EQ(h.store().GetJob(assigns[0].job_id)->state, store::JobState::kSucceeded);
  EXPECT_EQ(h.store().GetRun(run)->state, store::RunState::kSucceeded);
}

// A RunFinished stored while one of its chunks was not (a full disk): the run
// keeps its lease, so the job completes when the chunk comes, and runs again
// when it never does.
TEST(ConvergenceTest, AFinishedRunMissingAChunkCompletesWhenItComesOrRunsAgain) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 2)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello({}, 2);
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(assigns, SizeIs(2));
  for (const protocol::Assign& a : assigns) {
    agent->Chunk(a.run_id, 1);  // chunk 0 is missing
    agent->Finish(a.run_id, 2);
  }
  h.Pump();
  agent->Chunk(assigns[0].run_id, 0);  // the first run's chunk comes late
  h.Pump();
  EXPECT_EQ(h.store().GetJob(assigns[0].job_id)->state, store::JobState::kSucceeded);
  EXPECT_EQ(h.store().GetJob(assigns[1].job_id)->state, store::JobState::kAssigned);
  for (int i = 0; i < 31; ++i) {  // the second run's never does
    agent->Send(protocol::Heartbeat{"agent-1", {}, 2});
    h.Advance(milliseconds(1000));
  }
  auto again = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(again, SizeIs(1)) << "its lease expired: the job runs again";
  EXPECT_EQ(again[0].job_id, assigns[1].job_id);
}

// The same after a coordinator restart: the restored run still waits for its
// missing chunk under a lease instead of the job being run again at once.
TEST(ConvergenceTest, AfterARestartAFinishedRunMissingAChunkStillCompletesWhenItComes) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(assigns, SizeIs(1));
  std::string run = assigns[0].run_id;
  agent->Chunk(run, 1);  // chunk 0 is missing
  agent->Finish(run, 2);
  h.Pump();

  h.Restart();
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.delivering_runs = {run};
  agent->Send(hello);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0))
      << "the job is not run again while its run waits for a chunk";
  agent->Chunk(run, 0);  // the spool sends it again
  h.Pump();
  EXPECT_EQ(h.store().GetJob(assigns[0].job_id)->state, store::JobState::kSucceeded);
  EXPECT_EQ(h.store().GetJob(assigns[0].job_id)->current_run_id, run);
}

TEST(ConvergenceTest, AfterARestartAFinishedRunWhoseChunkNeverComesRunsAgainWhenItsLeaseEnds) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_THAT(assigns, SizeIs(1));
  agent->Chunk(assigns[0].run_id, 1);
  agent->Finish(assigns[0].run_id, 2);
  h.Pump();

  h.Restart();
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.delivering_runs = {assigns[0].run_id};  // says it has it, never sends it
  agent->Send(hello);
  h.Pump();
  std::vector<protocol::Assign> again;
  for (int i = 0; i < 31 && again.empty(); ++i) {
    agent->Send(protocol::Heartbeat{"agent-1", {}, 1});
    h.Advance(milliseconds(1000));
    again = OfKind<protocol::Assign>(agent->Take());
  }
  ASSERT_THAT(again, SizeIs(1)) << "its lease expired: the job runs again";
  EXPECT_EQ(again[0].job_id, assigns[0].job_id);
  EXPECT_EQ(h.store().GetRun(assigns[0].run_id)->state, store::RunState::kLost);
}

}  // namespace
}  // namespace orch::coordinator
