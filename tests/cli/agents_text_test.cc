// What `orch agents` prints: the list with every agent state by name, and one agent in
// full.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/agents_command.h"

namespace orch::cli {
namespace {

using ::testing::HasSubstr;

protocol::StatusReply AgentsReply() {
  protocol::StatusReply reply;
  protocol::AgentSummary up;
  up.agent_id = "box-1";
  up.host = "gpu-01";
  up.hardware_class = "cuda";
  up.engines = {"llama.cpp@b8390", "torch@2.5.1"};
  up.slots = 2;
  up.current_runs = {"run-1"};
  up.model_count = 3;
  up.quarantined = "torch (torch@2.5.1): exited 1 (log: /var/log/x)";
  reply.agents.push_back(up);
  protocol::AgentSummary drained = up;
  drained.agent_id = "box-2";
  drained.state = protocol::AgentState::kDrained;
  drained.current_runs.clear();
  drained.quarantined.clear();
  reply.agents.push_back(drained);
  protocol::AgentSummary never;
  never.agent_id = "box-3";
  never.state = protocol::AgentState::kNeverSeen;
  reply.agents.push_back(never);
  return reply;
}

TEST(AgentsTextTest, ListsEachAgentWithItsState) {
  std::string text = FormatAgentsTable(AgentsReply());
  EXPECT_THAT(text, HasSubstr("AGENT"));
  EXPECT_THAT(text,
              ::testing::ContainsRegex("box-1 +up +gpu-01 +cuda +1/2 +llama.cpp@b8390,torch"));
  EXPECT_THAT(text, ::testing::ContainsRegex("box-2 +drained +gpu-01"));
  EXPECT_THAT(text, ::testing::ContainsRegex("box-3 +never seen +- +- +0/1"));
  EXPECT_EQ(FormatAgentsTable({}), "(no agents)\n");
}

// A run that ended and is being delivered holds no slot: "2/1" would say the agent
// runs more than it can.
TEST(AgentsTextTest, RunsBeingDeliveredAreShownApartFromTheSlots) {
  protocol::StatusReply reply = AgentsReply();
  reply.agents[0].slots = 1;
  reply.agents[0].current_runs = {"run-1", "run-2"};
  reply.agents[0].delivering_runs = 1;
  EXPECT_THAT(FormatAgentsTable(reply),
              ::testing::ContainsRegex("box-1 +up +gpu-01 +cuda +1/1 \\+1 delivering +llama"));
}

TEST(AgentsTextTest, OneAgentShowsItsDriversModelsAndQuarantines) {
  std::string text = FormatAgentDetail(AgentsReply().agents[0]);
  EXPECT_THAT(text, HasSubstr("agent box-1: up\n"));
  EXPECT_THAT(text, HasSubstr("drivers (engine@version): llama.cpp@b8390, torch@2.5.1\n"));
  EXPECT_THAT(text, HasSubstr("model files: 3\n"));
  EXPECT_THAT(text, HasSubstr("quarantined drivers: torch (torch@2.5.1): exited 1"));
  EXPECT_THAT(text, HasSubstr("runs in flight: run-1\n"));
}

}  // namespace
}  // namespace orch::cli
