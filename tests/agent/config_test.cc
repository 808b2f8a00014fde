#include "agent/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::agent {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kValid = R"(
[agent]
id = "agent-1"
coordinator = "tcp://127.0.0.1:7700"
slots = 2
hardware = "gpu:h100"
gpus = 1
spool_dir = "spool-agent-1"
model_dirs = ["models", "/abs/models"]
model_cache = "/var/cache/orch-models"
run_timeout_ms = 5000
stop_drain_ms = 120000
synth_max_bytes = 17179869184

[[drivers]]
name = "test"
executable = "bin/orch-test-driver"
engine = "test-engine@1"
)";

TEST(AgentConfigTest, ParsesEveryFieldAndResolvesRelativePaths) {
  Result<AgentConfig> config = ParseAgentConfig(kValid, "agent.toml", "/etc/orch");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->id, "agent-1");
  EXPECT_EQ(config->coordinator, "tcp://127.0.0.1:7700");
  EXPECT_EQ(config->slots, 2);
  EXPECT_EQ(config->hardware, "gpu:h100");
  EXPECT_EQ(config->gpus, 1);
  EXPECT_EQ(config->spool_dir, "/etc/orch/spool-agent-1");
  EXPECT_EQ(config->model_dirs, (std::vector<std::string>{"/etc/orch/models", "/abs/models"}));
  EXPECT_EQ(config->model_cache, "/var/cache/orch-models");
  EXPECT_EQ(config->run_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(config->stop_drain, std::chrono::milliseconds(120000));
  EXPECT_EQ(config->synth_max_bytes, 16ull << 30);
  ASSERT_EQ(config->drivers.size(), 1u);
  EXPECT_EQ(config->drivers[0].executable, "/etc/orch/bin/orch-test-driver");
  EXPECT_EQ(config->drivers[0].engine, "test-engine@1");
}

TEST(AgentConfigTest, DefaultsOptionalFields) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://127.0.0.1:1\"\n", "a.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->slots, 1);
  EXPECT_EQ(config->hardware, "cpu");
  EXPECT_EQ(config->spool_dir, "/d/spool-a");
  EXPECT_EQ(config->model_cache, "/d/model-cache");
  EXPECT_EQ(config->stop_drain, std::chrono::milliseconds(0));
  EXPECT_EQ(config->synth_max_bytes, model::kDefaultSynthMaxBytes);
  EXPECT_TRUE(config->drivers.empty());
}

TEST(AgentConfigTest, ExampleConfigParses) {
  Result<AgentConfig> config =
      LoadAgentConfig(std::string(ORCH_SOURCE_DIR) + "/examples/agent.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->model_cache, std::string(ORCH_SOURCE_DIR) + "/examples/model-cache");
}

TEST(AgentConfigTest, ErrorNamesFileLineColumnFieldAndValue) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nslots = 0\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("agent.toml:4:9: agent.slots"));
  EXPECT_THAT(config.status().message(), HasSubstr("got 0"));
}

TEST(AgentConfigTest, ASynthCapBelowOneByteIsRefused) {
  Result<AgentConfig> config =
      ParseAgentConfig("[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nsynth_max_bytes = 0\n",
                       "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.toml:4:19: agent.synth_max_bytes"));
}

TEST(AgentConfigTest, RejectsWrongTypes) {
  Result<AgentConfig> config =
      ParseAgentConfig("[agent]\nid = 7\ncoordinator = \"tcp://h:1\"\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("agent.toml:2:6: agent.id: must be a string, got 7"));
}

TEST(AgentConfigTest, RejectsANegativeStopDrain) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nstop_drain_ms = -5\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.toml:4:17: agent.stop_drain_ms"));
  EXPECT_THAT(config.status().message(), HasSubstr("got -5"));
}

TEST(AgentConfigTest, RejectsAnIdTheTransportCannotCarry) {
  for (const char* id : {"gpu box", "agent~1", "agent/1"}) {
    Result<AgentConfig> config =
        ParseAgentConfig(std::string("[agent]\nid = \"") + id + "\"\ncoordinator = \"tcp://h:1\"\n",
                         "agent.toml", "/d");
    ASSERT_FALSE(config.ok()) << id;
    EXPECT_THAT(config.status().message(),
                HasSubstr("agent.id: \"" + std::string(id) + "\" must be 1..200 characters of"));
  }
}

TEST(AgentConfigTest, RejectsACoordinatorThatIsNotAnEndpoint) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"not-an-endpoint\"\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("agent.toml:3:15: agent.coordinator: \"not-an-endpoint\": unknown "
                        "transport; expected tcp://HOST:PORT"));
}

TEST(AgentConfigTest, RejectsUnknownKeys) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nslot = 2\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.toml:4:8: agent.slot: unknown key"));
}

TEST(AgentConfigTest, RejectsMissingRequiredFields) {
  Result<AgentConfig> config = ParseAgentConfig("[agent]\nid = \"a\"\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.coordinator: required"));
  EXPECT_FALSE(ParseAgentConfig("", "agent.toml", "/d").ok());
}

TEST(AgentConfigTest, RejectsDriversWithoutEngineAndDuplicateNames) {
  std::string base = "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\n";
  Result<AgentConfig> missing = ParseAgentConfig(
      base + "[[drivers]]\nname = \"t\"\nexecutable = \"/bin/t\"\n", "agent.toml", "/d");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("drivers[0].engine: required"));
  std::string driver = "[[drivers]]\nname = \"t\"\nexecutable = \"/bin/t\"\nengine = \"e\"\n";
  Result<AgentConfig> duplicate = ParseAgentConfig(base + driver + driver, "agent.toml", "/d");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("drivers[1].name: duplicate"));
}

TEST(AgentConfigTest, ReportsTomlSyntaxErrorsWithPosition) {
  Result<AgentConfig> config = ParseAgentConfig("[agent\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.toml:1:"));
}

}  // namespace
}  // namespace orch::agent
