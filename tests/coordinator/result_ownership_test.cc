// Results belong to the agent that holds the run: a peer that was not assigned the run
// cannot start it, add digests to it or finish it, and a claimed success has to be
// plausible.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders

protocol::Assign AssignTo(CoordinatorHarness& h, ScriptedPeer& agent) {
  agent.Hello();
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent.Take());
  EXPECT_THAT(assigns, SizeIs(1));
  return assigns.empty() ? protocol::Assign{} : assigns[0];
}

TEST(ResultOwnershipTest, AForgedFinishFromAnotherPeerIsIgnoredAndTheRealRunCompletes) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  protocol::Assign assign = AssignTo(h, *agent);
  auto forger = h.Peer("intruder");
  forger->Send(protocol::RunStarted{assign.run_id});
  forger->Chunk(assign.run_id, 0, 3);
  forger->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(forger->Take()), SizeIs(0)) << "nothing acknowledged";
  EXPECT_FALSE(h.store().GetRun(assign.run_id)->finished);
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kAssigned);

  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0, 2);
  agent->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(2));
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kSucceeded);
  int digests = 0;
  ASSERT_TRUE(h.store()
                  .ScanDigests(assign.run_id, 0,
                               [&](std::uint64_t, std::string_view bytes) {
                                 EXPECT_EQ(bytes.find("digest-"), 0u);
                                 ++digests;
                                 return true;
                               })
                  .ok());
  EXPECT_EQ(digests, 2) << "only the real agent's records are stored";
}

TEST(ResultOwnershipTest, ASuccessWithoutAnyDigestIsStoredAsAFailureAndRetried) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  protocol::Assign assign = AssignTo(h, *agent);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Finish(assign.run_id, 0);
  h.Pump();
  Result<store::RunRecord> run = h.store().GetRun(assign.run_id);
  EXPECT_EQ(run->state, store::RunState::kFailed);
  EXPECT_THAT(run->error, ::testing::HasSubstr("reported success without any digest"));
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1)) << "the job runs again";
}

TEST(ResultOwnershipTest, MoreChunksThanTheJobHasPositionsIsRefusedAndDoesNotWedgeTheJob) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);  // 16 positions
  auto agent = h.Peer("agent-1");
  protocol::Assign assign = AssignTo(h, *agent);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0);
  agent->Finish(assign.run_id, 1'000'000);
  h.Pump();
  EXPECT_EQ(h.store().GetRun(assign.run_id)->state, store::RunState::kFailed);
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1));
}

}  // namespace
}  // namespace orch::coordinator
