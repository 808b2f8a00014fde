// A real `orch agent` with broken drivers: it does not start on drivers that
// cannot run, offers only the drivers that pass their check, and quarantines a
// driver that passes the check but fails every run at start-up, so a healthy
// agent beside it finishes the jobs. Every wait is bounded; every process is
// stopped by pid (LocalCluster).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string SlurpHealthFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes an executable shell script DIR/NAME with `body`.
std::string Script(const LocalCluster& cluster, const std::string& name, const std::string& body,
                   mode_t mode = 0755) {
  std::string path = (cluster.dir() / name).string();
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), mode);
  return path;
}

// The agent `id` from `orch status --json`, or null.
nlohmann::json AgentInStatus(LocalCluster& cluster, const std::string& id) {
  std::optional<nlohmann::json> status = cluster.Status();
  if (!status) return nullptr;
  for (const nlohmann::json& agent : (*status)["agents"]) {
    if (agent.value("id", "") == id) return agent;
  }
  return nullptr;
}

std::string AgentLog(const LocalCluster& cluster, const std::string& id) {
  return SlurpHealthFile(cluster.dir() / ("agent-" + id + ".log"));
}

TEST(AgentDriverHealthTest, AnAgentWhoseOnlyDriverIsADirectoryExitsWithStatus2AndSaysWhy) {
  LocalCluster cluster("agent-driver-dir");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  std::string dir = cluster.dir().string();
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1", {{"llamacpp", "test-engine@1", dir}}));
  EXPECT_EQ(cluster.agent("a1").WaitFor(20s), 2) << cluster.Logs();
  EXPECT_THAT(AgentLog(cluster, "a1"),
              AllOf(HasSubstr("driver \"llamacpp\" (" + dir + "): is a directory"),
                    HasSubstr("none of the 1 drivers in"),
                    HasSubstr("fix them and start the agent again")));
  EXPECT_TRUE(AgentInStatus(cluster, "a1").is_null()) << "it never registered";
}

TEST(AgentDriverHealthTest, AnAgentWhoseOnlyDriverIsNotExecutableExitsWithStatus2) {
  LocalCluster cluster("agent-driver-noexec");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  std::string path = Script(cluster, "driver.sh", "exit 0\n", 0644);
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1", {{"test", "test-engine@1", path}}));
  EXPECT_EQ(cluster.agent("a1").WaitFor(20s), 2) << cluster.Logs();
  EXPECT_THAT(AgentLog(cluster, "a1"),
              AllOf(HasSubstr(path + "): is not executable"), HasSubstr("chmod +x")));
}

TEST(AgentDriverHealthTest, AnAgentOffersOnlyTheDriversThatPassTheirCheck) {
  LocalCluster cluster("agent-driver-some");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  std::string missing = (cluster.dir() / "no-such-driver").string();
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent(
      "a1", {{"gone", "gone-engine@1", missing}, {"test", "test-engine@1", TestDriverBinary()}}));
  nlohmann::json agent;
  bool registered = LocalCluster::WaitUntil(
      [&] { return !(agent = AgentInStatus(cluster, "a1")).is_null(); }, 20s);
  ASSERT_TRUE(registered) << cluster.Logs();
  EXPECT_EQ(agent["engines"], nlohmann::json::array({"test-engine@1"}));
  EXPECT_TRUE(cluster.agent("a1").running());
  EXPECT_THAT(AgentLog(cluster, "a1"),
              AllOf(HasSubstr("driver \"gone\" (" + missing + "): does not exist"),
                    HasSubstr("engine gone-engine@1 is not offered"),
                    HasSubstr("offering only: test-engine@1")));
  // The jobs of the engine it cannot offer say why, not only that nobody offers it.
  std::string spec = TestEngineSpec("e2e-gone", 3, 4, 0);
  spec.replace(spec.find("test-engine@1"), 13, "gone-engine@1");
  std::ofstream(cluster.dir() / "spec.toml") << spec;
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  ProcessResult jobs = cluster.Client({"status", "--jobs", "e2e-gone"});
  EXPECT_THAT(jobs.out, HasSubstr("no connected agent offers engine gone-engine@1 (offered: "
                                  "test-engine@1); agent a1's drivers that failed their check: "
                                  "gone (gone-engine@1): driver \"gone\" (" +
                                  missing + "): does not exist"))
      << jobs.out << jobs.err;
  ProcessResult submit_again = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  EXPECT_THAT(submit_again.out + submit_again.err, HasSubstr("failed their check"));
}

TEST(AgentDriverHealthTest, ADriverFailingEveryRunIsQuarantinedAndTheJobsFinishElsewhere) {
  constexpr int kJobs = 12;
  LocalCluster cluster("agent-driver-quarantine");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  // Answers `version` like the test driver, then dies at once on every job.
  std::string broken = Script(cluster, "broken-driver.sh",
                              "if [ \"$1\" = version ]; then\n"
                              "  echo '{\"engine\": \"test-engine\", \"version\": \"1\"}'\n"
                              "  exit 0\nfi\n"
                              "echo 'libengine.so: cannot open shared object file' >&2\n"
                              "exit 1\n");
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("broken", {{"test", "test-engine@1", broken}}));
  ASSERT_TRUE(
      LocalCluster::WaitUntil([&] { return !AgentInStatus(cluster, "broken").is_null(); }, 20s))
      << cluster.Logs();
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("healthy"));
  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec("e2e-quarantine", kJobs, 8, 20);
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << cluster.Logs();

  auto progress = [&](const char* field) {
    std::optional<nlohmann::json> p = cluster.Progress("e2e-quarantine");
    return p ? p->value(field, -1) : -1;
  };
  bool done = LocalCluster::WaitUntil(
      [&] { return progress("succeeded") + progress("failed") == kJobs; }, 120s);
  ASSERT_TRUE(done) << cluster.Status().value_or(nlohmann::json()).dump() << cluster.Logs();
  EXPECT_EQ(progress("succeeded"), kJobs) << cluster.Logs();
  nlohmann::json agent = AgentInStatus(cluster, "broken");
  ASSERT_FALSE(agent.is_null()) << cluster.Logs();
  EXPECT_EQ(agent["engines"], nlohmann::json::array()) << "its only engine is quarantined";
  EXPECT_THAT(agent.value("quarantined", ""),
              HasSubstr("test (test-engine@1): 3 runs in a row failed"))
      << "orch status says which driver and why";
  EXPECT_THAT(AgentLog(cluster, "broken"),
              AllOf(HasSubstr("driver test quarantined: 3 runs in a row failed"),
                    HasSubstr("exit status 1"), HasSubstr("restart the agent")));
}

}  // namespace
}  // namespace orch::testing
