#include "coordinator/agent_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

protocol::Hello RegistryHelloFrom(const std::string& id) {
  protocol::Hello hello;
  hello.agent_id = id;
  hello.capabilities.hardware_class = "cpu";
  hello.host_facts = {{"hostname", "node7"}};
  return hello;
}

TEST(AgentRegistryTest, ExpiresAgentsSilentForTheTimeout) {
  AgentRegistry agents(milliseconds(5000));
  agents.Register(RegistryHelloFrom("a"), milliseconds(0));
  agents.Register(RegistryHelloFrom("b"), milliseconds(1000));
  EXPECT_EQ(agents.NextDeadline(), milliseconds(5000));
  agents.Heard("b", milliseconds(4000));
  EXPECT_THAT(agents.Expire(milliseconds(5000)), ElementsAre("a"));
  EXPECT_EQ(agents.NextDeadline(), milliseconds(9000));
  EXPECT_EQ(agents.Find("a")->state, protocol::AgentState::kDisconnected);
  EXPECT_EQ(agents.Find("b")->host, "node7");
}

TEST(AgentRegistryTest, ADrainedAgentStaysDrainedWhenItReconnects) {
  AgentRegistry agents(milliseconds(5000));
  agents.Register(RegistryHelloFrom("a"), milliseconds(0)).drain_requested = true;
  EXPECT_FALSE(agents.Register(RegistryHelloFrom("a"), milliseconds(10)).TakesWork());
}

// `orch drain` ends with the agent's process; the same agent started again (an upgrade)
// takes work, while the draining process saying Hello again does not.
TEST(AgentRegistryTest, ADrainEndsWithTheAgentProcess) {
  AgentRegistry agents(milliseconds(5000));
  protocol::Hello first = RegistryHelloFrom("a");
  first.incarnation = "0000000000000001";
  agents.Register(first, milliseconds(0)).drain_requested = true;
  EXPECT_FALSE(agents.Register(first, milliseconds(10)).TakesWork());
  protocol::Hello restarted = RegistryHelloFrom("a");
  restarted.incarnation = "0000000000000002";
  EXPECT_TRUE(agents.Register(restarted, milliseconds(20)).TakesWork());
}

}  // namespace
}  // namespace orch::coordinator
