#include "coordinator/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(CoordinatorConfigTest, ReadsEveryKeyAndResolvesTheDataDirectory) {
  Result<CoordinatorConfig> config = ParseCoordinatorConfig(R"toml(
[coordinator]
id = "coord-7"
listen = "tcp://127.0.0.1:*"
data_dir = "data"
heartbeat_interval_ms = 200
agent_timeout_ms = 1000
lease_ms = 4000
retry_budget = 5
max_bundle_bytes = 268435456
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
  EXPECT_EQ(config->max_bundle_bytes, 268435456u);
}

TEST(CoordinatorConfigTest, PlainSocketsOnAReachableAddressNeedKeysOrInsecure) {
  Result<CoordinatorConfig> open =
      ParseCoordinatorConfig("[coordinator]\nlisten = \"tcp://0.0.0.0:7700\"\n", "c.toml");
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(open.status().message(),
              HasSubstr("coordinator.listen = tcp://0.0.0.0:7700: plain sockets on an address"));
  EXPECT_THAT(open.status().message(), HasSubstr("set key and allowed_keys"));
  EXPECT_TRUE(ParseCoordinatorConfig(
                  "[coordinator]\nlisten = \"tcp://0.0.0.0:7700\"\ninsecure = true\n", "c.toml")
                  .ok());
  Result<CoordinatorConfig> keyed = ParseCoordinatorConfig(
      "[coordinator]\nlisten = \"tcp://0.0.0.0:7700\"\nkey = \"k/c.key_secret\"\n"
      "allowed_keys = \"k/allowed\"\n",
      "/etc/orch/c.toml");
  ASSERT_TRUE(keyed.ok()) << keyed.status().ToString();
  EXPECT_EQ(keyed->key, "/etc/orch/k/c.key_secret");
  EXPECT_EQ(keyed->allowed_keys, "/etc/orch/k/allowed");
  EXPECT_THAT(ParseCoordinatorConfig("[coordinator]\nkey = \"k\"\n", "c.toml").status().message(),
              HasSubstr("allowed_keys: required with key"));
  EXPECT_THAT(ParseCoordinatorConfig("[coordinator]\ninsecure = 1\n", "c.toml").status().message(),
              HasSubstr("insecure = 1: expected true or false"));
}

TEST(CoordinatorConfigTest, AMetricsListenerReachableFromOtherMachinesNeedsAViewerToken) {
  Result<CoordinatorConfig> loopback =
      ParseCoordinatorConfig("[coordinator]\nmetrics_listen = \"127.0.0.1:9464\"\n", "c.toml");
  ASSERT_TRUE(loopback.ok()) << loopback.status().ToString();
  EXPECT_EQ(loopback->metrics_listen, "127.0.0.1:9464");
  Result<CoordinatorConfig> open =
      ParseCoordinatorConfig("[coordinator]\nmetrics_listen = \"0.0.0.0:9464\"\n", "c.toml");
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(open.status().message(),
              HasSubstr("c.toml:2:18: coordinator.metrics_listen = 0.0.0.0:9464: "));
  EXPECT_THAT(open.status().message(), HasSubstr("set coordinator.metrics_viewer_token_file"));
  Result<CoordinatorConfig> tokened = ParseCoordinatorConfig(
      "[coordinator]\nmetrics_listen = \"0.0.0.0:9464\"\n"
      "metrics_viewer_token_file = \"keys/viewer.token\"\n",
      "/etc/orch/c.toml");
  ASSERT_TRUE(tokened.ok()) << tokened.status().ToString();
  EXPECT_EQ(tokened->metrics_viewer_token_file, "/etc/orch/keys/viewer.token");
  EXPECT_THAT(ParseCoordinatorConfig("[coordinator]\nmetrics_listen = \"9464\"\n", "c.toml")
                  .status()
                  .message(),
              HasSubstr("coordinator.metrics_listen = 9464: listen address \"9464\": expected "
                        "HOST:PORT"));
}

TEST(CoordinatorConfigTest, TheExampleConfigIsValidAndAuthenticated) {
  std::string path = std::string(ORCH_SOURCE_DIR) + "/examples/coordinator.toml";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<CoordinatorConfig> config = ParseCoordinatorConfig(text, path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->key.empty());
  EXPECT_FALSE(config->insecure);
}

TEST(CoordinatorConfigTest, DefaultsFillWhatIsLeftOut) {
  Result<CoordinatorConfig> config = ParseCoordinatorConfig("[coordinator]\n", "c.toml");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->listen, "tcp://127.0.0.1:7700");
  EXPECT_EQ(config->data_dir, "orch-data");
  EXPECT_EQ(config->options.retry_budget, 3);
  EXPECT_EQ(config->max_bundle_bytes, 1u << 30);
  Result<CoordinatorConfig> tiny =
      ParseCoordinatorConfig("[coordinator]\nmax_bundle_bytes = 1000\n", "c.toml");
  EXPECT_THAT(tiny.status().message(),
              HasSubstr("coordinator.max_bundle_bytes = 1000: expected an integer >= 1048576"));
}

TEST(CoordinatorConfigTest, ErrorsNamePositionFieldAndValue) {
  Result<CoordinatorConfig> bad =
      ParseCoordinatorConfig("[coordinator]\nlease_ms = -5\n", "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("c.toml:2:"));
  EXPECT_THAT(bad.status().message(), HasSubstr("coordinator.lease_ms = -5"));
  Result<CoordinatorConfig> typo = ParseCoordinatorConfig("[coordinator]\nleas_ms = 5\n", "c.toml");
  EXPECT_THAT(typo.status().message(), HasSubstr("coordinator.leas_ms: unknown key"));
  Result<CoordinatorConfig> syntax = ParseCoordinatorConfig("[coordinator\n", "c.toml");
  EXPECT_THAT(syntax.status().message(), HasSubstr("c.toml:1:"));
}

// Every mistake of a config is said at once, one line each, so that a lab fixes them
// in one go; an unknown key names the known one it is closest to.
TEST(CoordinatorConfigTest, EveryMistakeIsSaidAtOnceWithDidYouMean) {
  Result<CoordinatorConfig> bad = ParseCoordinatorConfig(
      "[coordinator]\nlisen = \"tcp://127.0.0.1:7700\"\nlease_ms = -5\ninsecure = \"yes\"\n"
      "retry_budget = 0\n",
      "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "c.toml:2:9: coordinator.lisen: unknown key; did you mean \"listen\"?\n"
            "c.toml:3:12: coordinator.lease_ms = -5: expected an integer >= 1\n"
            "c.toml:4:12: coordinator.insecure = 'yes': expected true or false\n"
            "c.toml:5:16: coordinator.retry_budget = 0: expected an integer >= 1");
}

TEST(CoordinatorConfigTest, RefusesTimingsThatCannotWork) {
  Result<CoordinatorConfig> lease = ParseCoordinatorConfig(
      "[coordinator]\nheartbeat_interval_ms = 1000\nlease_ms = 500\n", "c.toml");
  ASSERT_FALSE(lease.ok());
  EXPECT_THAT(lease.status().message(),
              HasSubstr("c.toml:3:12: coordinator.lease_ms = 500: must be at least twice "
                        "heartbeat_interval_ms (1000)"));
  Result<CoordinatorConfig> timeout = ParseCoordinatorConfig(
      "[coordinator]\nheartbeat_interval_ms = 8000\nlease_ms = 60000\n", "c.toml");
  ASSERT_FALSE(timeout.ok());
  EXPECT_THAT(timeout.status().message(),
              HasSubstr("coordinator.agent_timeout_ms = 5000: must be at least twice "
                        "heartbeat_interval_ms (8000)"));
}

TEST(CoordinatorConfigTest, RefusesAListenAddressThatIsNotAnEndpoint) {
  Result<CoordinatorConfig> bad =
      ParseCoordinatorConfig("[coordinator]\nlisten = \"garbage\"\n", "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("c.toml:2:10: coordinator.listen: \"garbage\": unknown transport"));
}

}  // namespace
}  // namespace orch::coordinator
