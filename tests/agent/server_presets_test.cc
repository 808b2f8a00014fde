// Server presets: the standard axis mapping of a launched llama-server, and a preset
// named in an agent config.
#include "agent/server_presets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/server_pool.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;

constexpr char kPresetAgent[] = R"([agent]
id = "a1"
coordinator = "tcp://127.0.0.1:5555"
spool_dir = "spool"
)";

ServerConfig PresetEntry() {
  ServerConfig server;
  server.engine = "llama-server@b8390";
  server.where = "agent.toml:9";
  server.launch = {"/opt/llama-server", "-m", "{model}", "--port", "{port}"};
  server.preset = "llama-server";
  EXPECT_TRUE(ApplyServerPreset(server).ok());
  return server;
}

std::vector<std::string> AxisArgs(const ServerConfig& server, const AxisValues& axes) {
  std::vector<std::string> argv = ExpandLaunch(server, {"/m/a.gguf", axes}, 4242).argv;
  return {argv.begin() + 5, argv.end()};
}

TEST(ServerPresetTest, LlamaServerMapsTheLaunchAxesToItsFlags) {
  ServerConfig server = PresetEntry();
  EXPECT_EQ(AxisArgs(server, {{"attention", "on"}, {"kv", "q8_0/f16"}, {"slots", "4"}}),
            (std::vector<std::string>{"-fa", "on", "-ctk", "q8_0", "-ctv", "f16", "-np", "4"}));
  EXPECT_EQ(
      AxisArgs(server, {{"kv", "f32"}, {"hardware", "cpu"}, {"tp", "1"}}),
      (std::vector<std::string>{"-ngl", "0", "--device", "none", "-ctk", "f32", "-ctv", "f32"}));
  EXPECT_EQ(AxisArgs(server, {{"threads", "2"}, {"ctx", "512"}, {"batch", "0"}}),
            (std::vector<std::string>{"-c", "512", "-t", "2", "-tb", "2"}));
  EXPECT_EQ(AxisArgs(server, {{"repack", "off"}, {"ubatch", "64"}}),
            (std::vector<std::string>{"--no-repack", "-ub", "64"}));
}

TEST(ServerPresetTest, WhatTheLlamaServerPresetCannotLaunchIsRefused) {
  ServerPool pool({PresetEntry()});
  auto alive = [](int) { return true; };
  ServerDecision tp2 = pool.Choose("r1", "llama-server@b8390", "/m/a.gguf", {{"tp", "2"}}, alive);
  EXPECT_EQ(tp2.kind, ServerDecision::Kind::kRefused);
  EXPECT_THAT(tp2.message, HasSubstr("axis tp = \"2\""));
  ServerDecision kv = pool.Choose("r2", "llama-server@b8390", "/m/a.gguf", {{"kv", "q9"}}, alive);
  EXPECT_EQ(kv.kind, ServerDecision::Kind::kRefused);
}

TEST(ServerPresetTest, TheEntrysOwnMappingOfAnAxisWins) {
  ServerConfig server;
  server.launch = {"/opt/llama-server", "-m", "{model}", "--port", "{port}"};
  server.axes["attention"] = {{"on", {{"--flash-attn"}, {}}}};
  server.preset = "llama-server";
  ASSERT_TRUE(ApplyServerPreset(server).ok());
  EXPECT_EQ(AxisArgs(server, {{"attention", "on"}}), std::vector<std::string>{"--flash-attn"});
  EXPECT_FALSE(server.axes.at("attention").contains("off"));
  EXPECT_TRUE(server.axes.contains("kv"));
}

TEST(ServerPresetTest, AnAgentConfigNamesAPresetAndAnUnknownOneIsRefusedWithASuggestion) {
  std::string text = std::string(kPresetAgent) + R"(
[[servers]]
engine = "llama-server@b8390"
launch = ["/opt/llama-server", "-m", "{model}", "--port", "{port}"]
preset = "llama-server"
)";
  Result<AgentConfig> config = ParseAgentConfig(text, "agent.toml", "/etc/orch");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->servers[0].preset, "llama-server");
  EXPECT_EQ(config->servers[0].axes.at("slots").at("*").args,
            (std::vector<std::string>{"-np", "{value}"}));

  std::string typo = text;
  typo.replace(typo.find("preset = \"llama-server\""), 23, "preset = \"llama-sever\"");
  Result<AgentConfig> refused = ParseAgentConfig(typo, "agent.toml", "/etc/orch");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("agent.toml:9"));
  EXPECT_THAT(refused.status().message(), HasSubstr("servers[0].preset"));
  EXPECT_THAT(refused.status().message(), HasSubstr("did you mean \"llama-server\""));

  std::string attached = std::string(kPresetAgent) + R"(
[[servers]]
engine = "vllm@0.11.0"
url = "http://127.0.0.1:8000"
preset = "llama-server"
)";
  Result<AgentConfig> wrong = ParseAgentConfig(attached, "agent.toml", "/etc/orch");
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("applies to launch entries only"));
}

}  // namespace
}  // namespace orch::agent
