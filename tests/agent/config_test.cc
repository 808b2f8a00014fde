#include "agent/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace orch::agent {
namespace {

using ::testing::AllOf;
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

TEST(AgentConfigTest, WarmSessionsDefaultToTwoAndFiveMinutesIdle) {
  Result<AgentConfig> config =
      ParseAgentConfig("[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\n", "agent.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->warm_sessions, 2);
  EXPECT_EQ(config->warm_idle, std::chrono::milliseconds(300000));
  config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nwarm_sessions = 0\nwarm_idle_ms = 5\n",
      "agent.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->warm_sessions, 0);
  EXPECT_EQ(config->warm_idle, std::chrono::milliseconds(5));
}

TEST(AgentConfigTest, BadWarmSessionValuesNameTheKeyAndValue) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nwarm_sessions = -1\n", "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("agent.toml:4:17: agent.warm_sessions"), HasSubstr("-1")));
  config = ParseAgentConfig("[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nwarm_idle_ms = 0\n",
                            "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("agent.toml:4:16: agent.warm_idle_ms"), HasSubstr("got 0")));
  config =
      ParseAgentConfig("[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nwarm_sessions = \"2\"\n",
                       "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("agent.warm_sessions: must be an integer"));
}

TEST(AgentConfigTest, MetricsListenIsOffByDefaultAndItsTokenFileResolvesRelative) {
  Result<AgentConfig> config =
      ParseAgentConfig("[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\n", "agent.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->metrics_listen, "");
  config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nmetrics_listen = \"0.0.0.0:9465\"\n"
      "metrics_viewer_token_file = \"keys/viewer.token\"\n",
      "agent.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->metrics_listen, "0.0.0.0:9465");
  EXPECT_EQ(config->metrics_viewer_token_file, "/d/keys/viewer.token");
}

// Beyond loopback, anyone who reaches the port could read the agent's metrics.
TEST(AgentConfigTest, AMetricsListenerBeyondLoopbackNeedsAViewerToken) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nmetrics_listen = \"0.0.0.0:9465\"\n",
      "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("agent.toml:4:18: agent.metrics_listen = 0.0.0.0:9465"),
                    HasSubstr("agent.metrics_viewer_token_file")));
  config = ParseAgentConfig(
      "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\nmetrics_listen = \"localhost\"\n",
      "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("agent.toml:4:18: agent.metrics_listen = localhost"));
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
  EXPECT_THAT(config.status().message(),
              HasSubstr("agent.toml:4:8: agent.slot: unknown key; did you mean \"slots\"?"));
}

constexpr std::string_view kAgent = "[agent]\nid = \"a\"\ncoordinator = \"tcp://h:1\"\n";

TEST(AgentConfigTest, ParsesLaunchedAndAttachedServers) {
  std::string text = std::string(kAgent) + R"(
[[servers]]
engine = "llama-server@b8390"
launch = ["bin/llama-server", "-m", "{model}", "--host", "{host}", "--port", "{port}"]
health = "/healthz"
start_timeout_ms = 30000
stop_timeout_ms = 2000
[servers.axes.attention]
on = ["-fa", "on"]
off = ["-fa", "off"]
[servers.axes.slots]
"4" = { args = ["-np", "4"], env = { LLAMA_ARG_N_PARALLEL = "4" } }

[[servers]]
engine = "vllm@0.11.0"
url = "http://gpu-1:8000"
api_key_file = "keys/vllm.key"
)";
  Result<AgentConfig> config = ParseAgentConfig(text, "agent.toml", "/etc/orch");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->servers.size(), 2u);
  const ServerConfig& launched = config->servers[0];
  EXPECT_EQ(launched.engine, "llama-server@b8390");
  EXPECT_EQ(launched.where, "agent.toml:5");  // its [[servers]] line
  EXPECT_TRUE(launched.launched());
  EXPECT_EQ(launched.launch,
            (std::vector<std::string>{"/etc/orch/bin/llama-server", "-m", "{model}", "--host",
                                      "{host}", "--port", "{port}"}));
  EXPECT_EQ(launched.health, "/healthz");
  EXPECT_EQ(launched.start_timeout, std::chrono::milliseconds(30000));
  EXPECT_EQ(launched.stop_timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(launched.axes.at("attention").at("on").args, (std::vector<std::string>{"-fa", "on"}));
  EXPECT_EQ(launched.axes.at("attention").at("off").args, (std::vector<std::string>{"-fa", "off"}));
  EXPECT_EQ(launched.axes.at("slots").at("4").args, (std::vector<std::string>{"-np", "4"}));
  EXPECT_EQ(launched.axes.at("slots").at("4").env,
            std::vector<std::string>{"LLAMA_ARG_N_PARALLEL=4"});
  const ServerConfig& attached = config->servers[1];
  EXPECT_FALSE(attached.launched());
  EXPECT_EQ(attached.url, "http://gpu-1:8000");
  EXPECT_EQ(attached.api_key_file, "/etc/orch/keys/vllm.key");
}

TEST(AgentConfigTest, ServerDefaultsAndABareProgramNameStaysForThePathLookup) {
  Result<AgentConfig> config = ParseAgentConfig(
      std::string(kAgent) +
          "[[servers]]\nengine = \"sglang@0.5\"\nlaunch = [\"python3\", \"--port={port}\"]\n",
      "agent.toml", "/d");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->servers[0].launch[0], "python3");
  EXPECT_EQ(config->servers[0].health, "/health");
  EXPECT_EQ(config->servers[0].start_timeout, std::chrono::milliseconds(120000));
  EXPECT_EQ(config->servers[0].stop_timeout, std::chrono::milliseconds(10000));
  EXPECT_TRUE(config->servers[0].axes.empty());
}

// The message of parsing kAgent + `servers`.
std::string ServerError(const std::string& servers) {
  Result<AgentConfig> config = ParseAgentConfig(std::string(kAgent) + servers, "agent.toml", "/d");
  return config.ok() ? "(parsed)" : config.status().message();
}

TEST(AgentConfigTest, RejectsBadServerEntriesNamingPlaceFieldAndValue) {
  std::string launch = "launch = [\"/bin/s\", \"{port}\"]\n";
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"llama-sever@b1\"\n" + launch),
              AllOf(HasSubstr("agent.toml:5:10: servers[0].engine: \"llama-sever\" is not a "
                              "server family; did you mean \"llama-server\"?")));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm\"\n" + launch),
              HasSubstr("servers[0].engine: must be FAMILY@VERSION"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\n"),
              HasSubstr("servers[0]: set either url"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\nurl = \"http://h:1\"\n" + launch),
              HasSubstr("set either url (attach to a running server) or launch"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\nurl = \"h:1\"\n"),
              HasSubstr("servers[0].url: must start with http:// or https://, got \"h:1\""));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\nlaunch = [\"/bin/s\"]\n"),
              HasSubstr("servers[0].launch: must pass {port} to the server"));
  EXPECT_THAT(
      ServerError(
          "[[servers]]\nengine = \"vllm@1\"\nlaunch = [\"/bin/s\", \"{port}\", \"{modle}\"]\n"),
      HasSubstr("servers[0].launch[2]: unknown placeholder {modle}; did you mean {model}?"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\nhelth = \"/h\"\n" + launch),
              HasSubstr("agent.toml:6:9: servers[0].helth: unknown key; did you mean \"health\"?"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\n" + launch + "health = \"h\"\n"),
              HasSubstr("servers[0].health: must be a path starting with /, got \"h\""));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\n" + launch + "start_timeout_ms = 0\n"),
              HasSubstr("servers[0].start_timeout_ms: must be in [1, 2147483647], got 0"));
}

TEST(AgentConfigTest, RejectsBadServerAxesAndDuplicateEngines) {
  std::string entry = "[[servers]]\nengine = \"vllm@1\"\nlaunch = [\"/bin/s\", \"{port}\"]\n";
  EXPECT_THAT(ServerError(entry + "[servers.axes.attention]\non = \"-fa\"\n"),
              HasSubstr("servers[0].axes.attention.on: must be an array of arguments or a table"));
  EXPECT_THAT(ServerError(entry + "[servers.axes.attention]\non = [\"-fa\", 1]\n"),
              HasSubstr("servers[0].axes.attention.on[1]: must be a string, got 1"));
  EXPECT_THAT(ServerError(entry + "[servers.axes.slots]\n\"4\" = { arg = [\"-np\"] }\n"),
              HasSubstr("servers[0].axes.slots.4.arg: unknown key; did you mean \"args\"?"));
  EXPECT_THAT(ServerError(entry + "[servers.axes]\nattention = 1\n"),
              HasSubstr("servers[0].axes.attention: must be a table mapping each accepted value"));
  EXPECT_THAT(ServerError("[[servers]]\nengine = \"vllm@1\"\nurl = \"http://h:1\"\n"
                          "[servers.axes.attention]\non = []\n"),
              HasSubstr("servers[0].axes: applies to launch entries only"));
  EXPECT_THAT(ServerError(entry + entry),
              HasSubstr("servers[1].engine: a second entry for \"vllm@1\" (the first is at "
                        "agent.toml:4)"));
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

// Every mistake at once, in file order: a user fixes the file in one pass, not one
// restart per mistake.
TEST(AgentConfigTest, EveryMistakeIsSaidAtOnceInFileOrder) {
  Result<AgentConfig> config = ParseAgentConfig(
      "[agent]\n"
      "id = \"a b\"\n"                                        // not a peer name (at [agent])
      "coordinator = \"h:1\"\n"                               // line 3: not an endpoint
      "slots = 0\n"                                           // line 4: out of range
      "warm_sesions = 2\n"                                    // line 5: unknown key
      "model_dirs = [\"m\", 3]\n"                             // line 6: not a string
      "[[drivers]]\nname = \"t\"\nexecutable = \"/bin/t\"\n"  // line 7: no engine
      "[[servers]]\nengine = \"vllm@1\"\nurl = 5\n",          // line 12: not a string
      "agent.toml", "/d");
  ASSERT_FALSE(config.ok());
  const std::string message = config.status().message();
  std::vector<std::string> lines;
  std::stringstream in(message);
  for (std::string line; std::getline(in, line);) {
    const std::size_t place = line.find(": ");  // after FILE:LINE:COLUMN
    lines.push_back(line.substr(0, line.find(": ", place + 2)));
  }
  EXPECT_THAT(lines, ::testing::ElementsAre(
                         "agent.toml:1:1: agent.id", "agent.toml:3:15: agent.coordinator",
                         "agent.toml:4:9: agent.slots", "agent.toml:5:16: agent.warm_sesions",
                         "agent.toml:6:20: agent.model_dirs[1]",
                         "agent.toml:7:1: drivers[0].engine", "agent.toml:12:7: servers[0].url"))
      << message;
  EXPECT_THAT(message, HasSubstr("did you mean \"warm_sessions\"?"));
}

}  // namespace
}  // namespace orch::agent
