// The coordinator under load over real sockets, in the short form CI runs: a real `orch
// coordinator` on 127.0.0.1, 200 simulated agents in two orch-sim-agents processes (one
// ZeroMQ DEALER each, real Hello and heartbeats, no-op runs), 2,000 jobs. It checks
// counts, not times (bench/coordinator_load_bench reports the times): every agent is
// welcomed, every job is assigned exactly once and succeeds, every RunFinished is
// acknowledged, nothing is refused or cancelled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "cli/child_process.h"
#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"
#include "tests/support/simulated_agents.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kProcesses = 2;
constexpr int kAgentsPerProcess = 100;
constexpr int kLoadJobs = 2000;

std::string SlurpLoadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LoadTest, TwoHundredSimulatedAgentsRunTwoThousandJobsEachExactlyOnce) {
  LocalCluster cluster("load");
  cluster.StartCoordinator("tcp://127.0.0.1:*");
  std::vector<cli::ChildProcess> simulators;
  for (int p = 0; p < kProcesses; ++p) {
    Result<cli::ChildProcess> child = cli::ChildProcess::Start(
        {SimAgentsBinary(), cluster.endpoint(), std::to_string(p * kAgentsPerProcess),
         std::to_string(kAgentsPerProcess),
         (cluster.dir() / ("sim-" + std::to_string(p) + ".json")).string()},
        (cluster.dir() / ("sim-" + std::to_string(p) + ".log")).string());
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    simulators.push_back(std::move(child).value());
  }
  bool registered = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> status = cluster.Status();
        return status && status->contains("agents") &&
               (*status)["agents"].size() ==
                   static_cast<std::size_t>(kProcesses * kAgentsPerProcess);
      },
      60s);
  ASSERT_TRUE(registered) << cluster.Logs();

  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec("load", kLoadJobs, 1, 0);
  ProcessResult submit = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  bool done = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> progress = cluster.Progress("load");
        return progress && progress->value("succeeded", -1) == kLoadJobs;
      },
      120s);
  EXPECT_TRUE(done) << cluster.Progress("load").value_or(nlohmann::json()).dump() << "\n"
                    << cluster.Logs();

  SimulatedAgentsStats total;
  for (int p = 0; p < kProcesses; ++p) {
    simulators[p].Signal(SIGTERM);
    ASSERT_EQ(simulators[p].WaitFor(10s), 0) << cluster.Logs();
    Result<SimulatedAgentsStats> stats =
        StatsFromJson(SlurpLoadFile(cluster.dir() / ("sim-" + std::to_string(p) + ".json")));
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    Merge(total, *stats);
  }
  EXPECT_EQ(total.welcomed, kProcesses * kAgentsPerProcess);
  EXPECT_EQ(total.rejects, 0u);
  EXPECT_EQ(total.assigns, static_cast<std::uint64_t>(kLoadJobs)) << "each job assigned once";
  EXPECT_EQ(total.duplicate_assigns, 0u);
  EXPECT_EQ(total.finished_acked, static_cast<std::uint64_t>(kLoadJobs));
  EXPECT_EQ(total.other_messages, 0u) << "no Cancel, no Drain, nothing undecodable";
  EXPECT_GT(total.heartbeats, 0u);

  cluster.coordinator().Stop(5s);
  Result<std::unique_ptr<store::Store>> opened = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(cluster.data_dir().string()), store::RocksDbOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Result<std::vector<store::JobRecord>> jobs = (*opened)->ListJobs("load");
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), static_cast<std::size_t>(kLoadJobs));
  for (const store::JobRecord& job : *jobs) {
    EXPECT_EQ(job.state, store::JobState::kSucceeded) << job.id;
    EXPECT_EQ(job.attempts, 1) << job.id;
  }
}

}  // namespace
}  // namespace orch::testing
