// ServerPool: which server a job of a server engine runs against, reuse and
// relaunch, without processes (the shell's facts are given).
#include "agent/server_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Kind = ServerDecision::Kind;

ServerConfig LaunchEntry() {
  ServerConfig server;
  server.engine = "llama-server@b8390";
  server.where = "agent.toml:12";
  server.launch = {"/opt/llama-server", "-m", "{model}", "--host", "{host}", "--port", "{port}"};
  server.axes["attention"] = {{"on", {{"-fa", "on"}, {}}}, {"off", {{"-fa", "off"}, {}}}};
  server.axes["slots"] = {{"4", {{"-np", "4"}, {"LLAMA_ARG_N_PARALLEL=4"}}}};
  return server;
}

ServerConfig AttachEntry() {
  ServerConfig server;
  server.engine = "vllm@0.11.0";
  server.url = "http://gpu-1:8000";
  server.api_key_file = "/etc/orch/vllm.key";
  return server;
}

class ServerPoolTest : public ::testing::Test {
 protected:
  ServerDecision Choose(const std::string& run_id, const AxisValues& coordinate,
                        const std::string& model = "/m/a.gguf",
                        const std::string& engine = "llama-server@b8390") {
    return pool_.Choose(run_id, engine, model, coordinate,
                        [this](int pid) { return !dead_.contains(pid); });
  }

  // Choose expecting a launch, then the shell's spawn and health.
  JobServer Launch(const std::string& run_id, const AxisValues& coordinate, int pid, int port,
                   const std::string& model = "/m/a.gguf") {
    ServerDecision decision = Choose(run_id, coordinate, model);
    EXPECT_EQ(decision.kind, Kind::kLaunch) << decision.message;
    pool_.Spawned(decision.entry, pid, port, "/spool/servers/s-" + std::to_string(pid) + ".log");
    return pool_.Ready(decision.entry, run_id);
  }

  ServerPool pool_{{LaunchEntry(), AttachEntry()}};
  std::set<int> dead_;
};

TEST_F(ServerPoolTest, AnEngineWithoutAnEntryGetsNoServer) {
  EXPECT_EQ(Choose("r1", {}, "/m/a.gguf", "llama.cpp@b8390").kind, Kind::kNone);
}

TEST_F(ServerPoolTest, AnAttachedEntryServesEveryJobAndCountsThem) {
  ServerDecision first = Choose("r1", {{"attention", "on"}}, "/m", "vllm@0.11.0");
  ASSERT_EQ(first.kind, Kind::kAttached);
  EXPECT_EQ(first.server.url, "http://gpu-1:8000");
  EXPECT_EQ(first.server.api_key_file, "/etc/orch/vllm.key");
  EXPECT_EQ(first.server.mode, "attached");
  EXPECT_EQ(first.server.jobs_before, 0);
  EXPECT_TRUE(first.server.coordinate.empty());
  EXPECT_EQ(Choose("r2", {}, "/other", "vllm@0.11.0").server.jobs_before, 1);
}

TEST_F(ServerPoolTest, TheFirstJobLaunchesAndTheNextWithTheSameCoordinateReusesIt) {
  ServerDecision decision = Choose("r1", {{"attention", "on"}, {"knob.seed", "7"}});
  ASSERT_EQ(decision.kind, Kind::kLaunch);
  EXPECT_FALSE(decision.stop_pid.has_value());
  // Only the axes the entry maps make the server-level coordinate.
  EXPECT_EQ(decision.key.axes, (AxisValues{{"attention", "on"}}));
  pool_.Spawned(decision.entry, 100, 4242, "/spool/servers/s.log");
  JobServer first = pool_.Ready(decision.entry, "r1");
  EXPECT_EQ(first.url, "http://127.0.0.1:4242");
  EXPECT_EQ(first.mode, "launched");
  EXPECT_EQ(first.jobs_before, 0);
  EXPECT_EQ(first.log, "/spool/servers/s.log");
  EXPECT_EQ(first.coordinate, (AxisValues{{"attention", "on"}}));
  pool_.Release("r1");
  ServerDecision again = Choose("r2", {{"attention", "on"}, {"knob.seed", "8"}});
  ASSERT_EQ(again.kind, Kind::kReused);
  EXPECT_EQ(again.server.url, "http://127.0.0.1:4242");
  EXPECT_EQ(again.server.jobs_before, 1);
  EXPECT_EQ(pool_.Pids(), std::vector<int>{100});
}

TEST_F(ServerPoolTest, JobsOfOneCoordinateShareTheServerAtOnce) {
  Launch("r1", {{"attention", "on"}}, 100, 4242);
  ServerDecision second = Choose("r2", {{"attention", "on"}});
  EXPECT_EQ(second.kind, Kind::kReused);
  EXPECT_EQ(second.server.jobs_before, 1);
}

TEST_F(ServerPoolTest, AnotherCoordinateStopsTheIdleServerAndLaunchesANewOne) {
  Launch("r1", {{"attention", "on"}}, 100, 4242);
  pool_.Release("r1");
  ServerDecision other = Choose("r2", {{"attention", "off"}});
  ASSERT_EQ(other.kind, Kind::kLaunch);
  EXPECT_EQ(other.stop_pid, 100);
  EXPECT_EQ(other.key.axes, (AxisValues{{"attention", "off"}}));
  pool_.Spawned(other.entry, 200, 5000, "/spool/servers/s2.log");
  EXPECT_EQ(pool_.Ready(other.entry, "r2").jobs_before, 0);
  EXPECT_EQ(pool_.Pids(), std::vector<int>{200});
}

TEST_F(ServerPoolTest, AnotherModelIsAnotherCoordinate) {
  Launch("r1", {}, 100, 4242, "/m/a.gguf");
  pool_.Release("r1");
  ServerDecision other = Choose("r2", {}, "/m/b.gguf");
  EXPECT_EQ(other.kind, Kind::kLaunch);
  EXPECT_EQ(other.stop_pid, 100);
}

TEST_F(ServerPoolTest, AServerInUseOrStartingIsNotReplacedTheJobIsRefusedBusy) {
  Launch("r1", {{"attention", "on"}}, 100, 4242);
  ServerDecision busy = Choose("r2", {{"attention", "off"}});
  EXPECT_EQ(busy.kind, Kind::kRefused);
  EXPECT_EQ(busy.code, "agent_busy");
  EXPECT_THAT(busy.message, AllOf(HasSubstr("attention=on"), HasSubstr("attention=off")));
  pool_.Release("r1");
  ASSERT_EQ(Choose("r3", {{"attention", "off"}}).kind, Kind::kLaunch);
  // Still starting: neither the same nor another coordinate may take it yet.
  EXPECT_EQ(Choose("r4", {{"attention", "off"}}).code, "agent_busy");
  EXPECT_EQ(Choose("r5", {{"attention", "on"}}).code, "agent_busy");
}

TEST_F(ServerPoolTest, AServerThatDiedBetweenJobsIsLaunchedAgainWithJobsBeforeZero) {
  Launch("r1", {{"attention", "on"}}, 100, 4242);
  pool_.Release("r1");
  dead_.insert(100);
  ServerDecision again = Choose("r2", {{"attention", "on"}});
  ASSERT_EQ(again.kind, Kind::kLaunch);
  EXPECT_FALSE(again.stop_pid.has_value());  // nothing left to stop
  pool_.Spawned(again.entry, 101, 4343, "/spool/servers/s3.log");
  JobServer server = pool_.Ready(again.entry, "r2");
  EXPECT_EQ(server.jobs_before, 0);
  EXPECT_EQ(server.url, "http://127.0.0.1:4343");
}

TEST_F(ServerPoolTest, AFailedStartLeavesTheEntryFreeToLaunchAgain) {
  ServerDecision decision = Choose("r1", {{"attention", "on"}});
  ASSERT_EQ(decision.kind, Kind::kLaunch);
  pool_.Spawned(decision.entry, 100, 4242, "/spool/servers/s.log");
  pool_.Failed(decision.entry);
  EXPECT_TRUE(pool_.Pids().empty());
  EXPECT_EQ(Choose("r2", {{"attention", "on"}}).kind, Kind::kLaunch);
}

TEST_F(ServerPoolTest, AnUnmappedAxisValueIsRefusedAsAnInvalidCombination) {
  ServerDecision refused = Choose("r1", {{"attention", "auto"}});
  EXPECT_EQ(refused.kind, Kind::kRefused);
  EXPECT_EQ(refused.code, "invalid_combination");
  EXPECT_THAT(refused.message,
              AllOf(HasSubstr("axis attention = \"auto\""), HasSubstr("llama-server@b8390"),
                    HasSubstr("agent.toml:12"), HasSubstr("it maps attention = off, on")));
  EXPECT_TRUE(pool_.Pids().empty());
}

TEST_F(ServerPoolTest, ExpandLaunchFillsPlaceholdersAndAppendsAxisArgumentsAndEnvironment) {
  ServerKey key{"/m/a.gguf", {{"attention", "on"}, {"slots", "4"}}};
  ServerLaunch launch = ExpandLaunch(LaunchEntry(), key, 4242);
  EXPECT_EQ(launch.argv,
            (std::vector<std::string>{"/opt/llama-server", "-m", "/m/a.gguf", "--host", "127.0.0.1",
                                      "--port", "4242", "-fa", "on", "-np", "4"}));
  EXPECT_EQ(launch.env, std::vector<std::string>{"LLAMA_ARG_N_PARALLEL=4"});
}

TEST_F(ServerPoolTest, AnAnyValueMappingTakesEveryUnlistedValueAndSubstitutesIt) {
  ServerConfig server = LaunchEntry();
  server.axes["threads"] = {{"0", {}}, {kAnyAxisValue, {{"-t", "{value}"}, {"THREADS={value}"}}}};
  ServerPool pool({server});
  auto alive = [](int) { return true; };
  ServerDecision decision =
      pool.Choose("r1", server.engine, "/m/a.gguf", {{"threads", "3"}}, alive);
  ASSERT_EQ(decision.kind, Kind::kLaunch) << decision.message;
  ServerLaunch launch = ExpandLaunch(server, decision.key, 4242);
  EXPECT_THAT(launch.argv, ::testing::ElementsAre("/opt/llama-server", "-m", "/m/a.gguf", "--host",
                                                  "127.0.0.1", "--port", "4242", "-t", "3"));
  EXPECT_EQ(launch.env, std::vector<std::string>{"THREADS=3"});
  // A listed value keeps its own mapping: threads 0 adds nothing.
  ServerKey zero{"/m/a.gguf", {{"threads", "0"}}};
  EXPECT_EQ(ExpandLaunch(server, zero, 4242).argv.size(), 7u);
}

}  // namespace
}  // namespace orch::agent
