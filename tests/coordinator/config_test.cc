#include "coordinator/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(CoordinatorConfigTest, ReadsEveryKeyAndResolvesTheDataDirectory) {
  Result<CoordinatorConfig> config =
      ParseCoordinatorConfig(R"toml(
[coordinator]
id = "coord-7"
listen = "tcp://127.0.0.1:*"
data_dir = "data"
heartbeat_interval_ms = 200
agent_timeout_ms = 1000
lease_ms = 4000
retry_budget = 5
)toml",
                             "/etc/orch/coordinator.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->options.id, "coord-7");
  EXPECT_EQ(config->listen, "tcp://127.0.0.1:*");
  EXPECT_EQ(config->data_dir, "/etc/orch/data");
  EXPECT_EQ(config->options.heartbeat_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(config->options.agent_timeout, std::chrono::milliseconds(1000));
  EXPECT_EQ(config->options.lease, std::chrono::milliseconds(4000));
  EXPECT_EQ(config->options.retry_budget, 5);
}

TEST(CoordinatorConfigTest, DefaultsFillWhatIsLeftOut) {
  Result<CoordinatorConfig> config =
      ParseCoordinatorConfig("[coordinator]\n", "c.toml");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->listen, "tcp://127.0.0.1:7700");
  EXPECT_EQ(config->data_dir, "orch-data");
  EXPECT_EQ(config->options.retry_budget, 3);
}

TEST(CoordinatorConfigTest, ErrorsNamePositionFieldAndValue) {
  Result<CoordinatorConfig> bad =
      ParseCoordinatorConfig("[coordinator]\nlease_ms = -5\n", "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("c.toml:2:"));
  EXPECT_THAT(bad.status().message(), HasSubstr("coordinator.lease_ms = -5"));
  Result<CoordinatorConfig> typo =
      ParseCoordinatorConfig("[coordinator]\nleas_ms = 5\n", "c.toml");
  EXPECT_THAT(typo.status().message(),
              HasSubstr("coordinator.leas_ms: unknown key"));
  Result<CoordinatorConfig> syntax =
      ParseCoordinatorConfig("[coordinator\n", "c.toml");
  EXPECT_THAT(syntax.status().message(), HasSubstr("c.toml:1:"));
}

}  // namespace
}  // namespace orch::coordinator
