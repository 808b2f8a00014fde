#include "coordinator/pending_reason.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

protocol::Hello AgentHello(const std::string& id, const std::string& hardware, int gpus,
                           std::vector<std::string> models = {}) {
  protocol::Hello hello;
  hello.agent_id = id;
  hello.capabilities = {{"vllm@0.9"}, hardware, gpus, 1, std::move(models)};
  return hello;
}

protocol::Requirements Needs(std::string hardware, int gpus, std::string model = "") {
  return {"vllm@0.9", std::move(hardware), gpus, std::move(model)};
}

class PendingReasonTest : public ::testing::Test {
 protected:
  PendingReason Explain(const protocol::Requirements& needs, std::vector<Refusal> refusals = {}) {
    return ExplainPending(needs, refusals, agents_,
                          [this](std::string_view id) { return busy_[std::string(id)]; });
  }
  AgentRegistry agents_{milliseconds(5000)};
  std::map<std::string, std::int32_t> busy_;
};

TEST_F(PendingReasonTest, NamesTheHardwareTheAgentsHave) {
  agents_.Register(AgentHello("a", "cpu", 0), milliseconds(0));
  PendingReason why = Explain(Needs("gpu:h100", 1));
  EXPECT_FALSE(why.runnable);
  EXPECT_EQ(why.text, "no agent with engine vllm@0.9 has hardware gpu:h100 (they have: cpu)");
}

// A driver that failed the agent's check at its start (its file missing, another
// version than its label) is why its engine is not offered: the reason says so.
TEST_F(PendingReasonTest, AnEngineWhoseDriverFailedItsCheckSaysWhy) {
  protocol::Hello hello = AgentHello("a", "cpu", 0);
  hello.capabilities.engines = {"llama.cpp@b8390"};
  hello.host_facts = {
      {"unavailable_drivers", "vllm-0.9 (vllm@0.9): driver vllm-0.9: /opt/d: no such file"}};
  agents_.Register(hello, milliseconds(0));
  agents_.Register(AgentHello("b", "cpu", 0), milliseconds(0));
  agents_.Find("b")->capabilities.engines = {"llama.cpp@b8390"};
  PendingReason why = Explain(Needs("cpu", 0));
  EXPECT_FALSE(why.runnable);
  EXPECT_EQ(why.text,
            "no connected agent offers engine vllm@0.9 (offered: llama.cpp@b8390); agent a's "
            "drivers that failed their check: vllm-0.9 (vllm@0.9): driver vllm-0.9: /opt/d: no "
            "such file");
  // An unavailable driver of another engine is not named.
  PendingReason other = Explain({"torch@2", "cpu", 0, ""});
  EXPECT_EQ(other.text, "no connected agent offers engine torch@2 (offered: llama.cpp@b8390)");
}

TEST_F(PendingReasonTest, NamesTheMostGpusAnAgentHas) {
  agents_.Register(AgentHello("a", "gpu:h100", 2), milliseconds(0));
  PendingReason why = Explain(Needs("gpu:h100", 4));
  EXPECT_FALSE(why.runnable);
  EXPECT_EQ(why.text, "no agent with engine vllm@0.9 on gpu:h100 has 4 GPUs (most: 2)");
}

TEST_F(PendingReasonTest, NamesTheModelNoAgentHolds) {
  std::string model = "sha256:" + std::string(64, 'a');
  agents_.Register(AgentHello("a", "cpu", 0, {"sha256:" + std::string(64, 'b')}), milliseconds(0));
  PendingReason why = Explain(Needs("cpu", 0, model));
  EXPECT_FALSE(why.runnable);
  EXPECT_THAT(why.text, HasSubstr("holds model " + model));
  EXPECT_THAT(why.text, HasSubstr("--model-dir"));
  agents_.Register(AgentHello("b", "cpu", 0, {model}), milliseconds(0));
  EXPECT_TRUE(Explain(Needs("cpu", 0, model)).runnable);
}

TEST_F(PendingReasonTest, DisconnectedAgentsDoNotCount) {
  agents_.Register(AgentHello("a", "cpu", 0), milliseconds(0));
  agents_.Disconnect("a");
  EXPECT_EQ(Explain(Needs("cpu", 0)).text, "no agent connected");
}

TEST_F(PendingReasonTest, DrainingAgentsTakeNothingNew) {
  agents_.Register(AgentHello("a", "cpu", 0), milliseconds(0));
  agents_.Find("a")->state = protocol::AgentState::kDraining;
  PendingReason why = Explain(Needs("cpu", 0));
  EXPECT_FALSE(why.runnable);
  EXPECT_EQ(why.text, "capable agents draining: a");
}

TEST_F(PendingReasonTest, ARefusalOfOneAgentLeavesTheOther) {
  agents_.Register(AgentHello("a", "cpu", 0), milliseconds(0));
  agents_.Register(AgentHello("b", "cpu", 0), milliseconds(0));
  busy_["b"] = 1;
  PendingReason why = Explain(Needs("cpu", 0), {{"a", "no model"}});
  EXPECT_TRUE(why.runnable);
  EXPECT_EQ(why.text, "waiting for a free slot on b");
}

}  // namespace
}  // namespace orch::coordinator
