#include "coordinator/run_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using ::testing::ElementsAre;

RunEntry InFlightRun(std::string id, std::string agent, int expiry_ms) {
  RunEntry run;
  run.id = std::move(id);
  run.job_id = "job";
  run.agent_id = std::move(agent);
  run.lease_expiry = Millis(expiry_ms);
  return run;
}

TEST(RunTableTest, ReportsExpiredLeasesInOrder) {
  RunTable runs;
  runs.Add(InFlightRun("b", "agent-1", 200));
  runs.Add(InFlightRun("a", "agent-1", 100));
  runs.Add(InFlightRun("c", "agent-2", 300));
  EXPECT_EQ(runs.NextExpiry(), Millis(100));
  EXPECT_THAT(runs.Expired(Millis(200)), ElementsAre("a", "b"));
}

TEST(RunTableTest, RenewingMovesTheDeadline) {
  RunTable runs;
  runs.Add(InFlightRun("a", "agent-1", 100));
  runs.Renew(*runs.Find("a"), Millis(500));
  EXPECT_TRUE(runs.Expired(Millis(499)).empty());
  EXPECT_EQ(runs.NextExpiry(), Millis(500));
}

TEST(RunTableTest, AnEndedRunHoldsNoLeaseOrSlotButStaysKnown) {
  RunTable runs;
  runs.Add(InFlightRun("a", "agent-1", 100));
  EXPECT_EQ(runs.CountOn("agent-1"), 1);
  runs.End(*runs.Find("a"), store::RunState::kLost, Millis(700));
  EXPECT_EQ(runs.CountOn("agent-1"), 0);
  EXPECT_EQ(runs.Find("a")->ended_at, Millis(700));
  EXPECT_EQ(runs.Find("a")->ToRecord().ended_at_ms, 700);
  EXPECT_EQ(runs.NextExpiry(), std::nullopt);
  ASSERT_NE(runs.Find("a"), nullptr);
  EXPECT_EQ(runs.Find("a")->state, store::RunState::kLost);
}

}  // namespace
}  // namespace orch::coordinator
