// Pilot jobs on a real Slurm cluster (docs/slurm.md): `orch slurm submit --watch` asks
// Slurm for agents shaped like the pending jobs (2 GPUs each), the agents start inside
// their allocations and take their GPUs from it, one pilot is cancelled with scancel
// while it runs a job, and the experiment still finishes with every job succeeded once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"
#include "tests/e2e/slurm_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

// Six jobs that need 2 GPUs of class gpu:fake, each a few seconds long.
std::string GpuSpec() {
  std::string spec = TestEngineSpec("e2e-slurm", 6, 12, 400);
  spec = std::regex_replace(spec, std::regex("hardware = \"cpu\""), "hardware = \"gpu:fake\"");
  return std::regex_replace(spec, std::regex("tp = 1"), "tp = 2");
}

TEST(SlurmTest, PilotsRunTheExperimentAndAScancelledPilotLosesNothing) {
  LocalCluster cluster("slurm");
  SlurmCluster slurm(cluster.dir() / "slurm");
  slurm.Start();
  if (HasFatalFailure()) return;
  cluster.StartCoordinator("tcp://127.0.0.1:*");
  // Another user's job with a pilot's name, held in the queue: not ours, so orch slurm
  // neither counts nor lists it, even where $USER is unset (cron, systemd, containers).
  ProcessResult decoy = slurm.Run({"sbatch", "--hold", "--uid=65534", "--gid=65534", "--parsable",
                                   "--job-name=orch-pilot-gpu_fake-g2", "--wrap", "true"});
  ASSERT_EQ(decoy.exit_code, 0) << decoy.err;
  const std::string decoy_id = decoy.out.substr(0, decoy.out.find_first_of(";\n"));
  ::unsetenv("USER");
  std::ofstream(cluster.dir() / "spec.toml") << GpuSpec();
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;

  // The pilots' agent config says nothing of GPUs: what they offer comes from Slurm.
  fs::path agent_config = cluster.dir() / "pilot.toml";
  std::ofstream(agent_config) << "[agent]\nid = \"pilots\"\ncoordinator = \"" << cluster.endpoint()
                              << "\"\nhardware = \"gpu:fake\"\nspool_dir = \""
                              << (cluster.dir() / "pilot-spool").string() << "\"\nmodel_cache = \""
                              << (cluster.dir() / "model-cache").string()
                              << "\"\n\n[[drivers]]\nname = \"test\"\nexecutable = \""
                              << TestDriverBinary() << "\"\nengine = \"test-engine@1\"\n";
  Result<cli::ChildProcess> pilots = cli::ChildProcess::Start(
      {OrchBinary(), "slurm", "submit", "--agent-config", agent_config.string(), "--max-pilots",
       "2", "--walltime", "00:10:00", "--orch", OrchBinary(), "--log-dir",
       (cluster.dir() / "pilots").string(), "--watch", "--interval", "1", "--coordinator",
       cluster.endpoint()},
      (cluster.dir() / "slurm-submit.log").string());
  ASSERT_TRUE(pilots.ok()) << pilots.status().ToString();

  // A job runs on a pilot: cancel that pilot through Slurm.
  std::string victim;  // the Slurm job id of a pilot running a job
  std::regex pilot_agent(R"(pilots\.slurm-(\d+))");
  bool running = LocalCluster::WaitUntil(
      [&] {
        std::string jobs = cluster.Client({"status", "--jobs"}).out;
        std::smatch match;
        if (jobs.find(" running ") == std::string::npos ||
            !std::regex_search(jobs, match, pilot_agent)) {
          return false;
        }
        victim = match[1];
        return true;
      },
      60s);
  ASSERT_TRUE(running) << cluster.Client({"status", "--jobs"}).out << slurm.Logs();
  // orch slurm status pairs the queue's pilots with their agents.
  ProcessResult pilot_status = cluster.Client({"slurm", "status"});
  EXPECT_EQ(pilot_status.exit_code, 0) << pilot_status.err;
  EXPECT_THAT(pilot_status.out, ::testing::Not(HasSubstr(decoy_id + " "))) << pilot_status.out;
  EXPECT_THAT(pilot_status.out, ::testing::ContainsRegex(victim +
                                                         " +orch-pilot-gpu_fake-g2 +RUNNING +"
                                                         "orchnode +pilots.slurm-" +
                                                         victim + " +up"));
  ProcessResult cancelled = slurm.Run({"scancel", victim});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;

  std::optional<int> done = pilots->WaitFor(120s);
  ASSERT_TRUE(done.has_value()) << "orch slurm submit --watch did not finish\n"
                                << cluster.Client({"status", "--jobs"}).out << slurm.Logs();
  EXPECT_EQ(*done, 0);
  std::optional<nlohmann::json> progress = cluster.Progress("e2e-slurm");
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ((*progress)["succeeded"], 6) << progress->dump();
  std::ifstream log(cluster.dir() / "slurm-submit.log");
  std::string submit_log((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(submit_log, HasSubstr("6 jobs need gpu:fake with 2 GPUs: submitting 2 pilots"));
  EXPECT_THAT(submit_log, HasSubstr("(orch-pilot-gpu_fake-g2)"));
  ProcessResult status = cluster.Client({"status", "--jobs"});
  EXPECT_THAT(status.out, HasSubstr("pilots.slurm-")) << "the jobs ran on pilots";

  // Nothing lost, nothing duplicated: each job has exactly one succeeded, complete run;
  // the cancelled pilot's run is not among them.
  ASSERT_EQ(cluster.coordinator().Stop(10s), 0);
  Result<std::unique_ptr<store::Store>> db =
      store::OpenRocksDbStore(store::RocksDbPathInDataDir(cluster.data_dir().string()), {});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Result<store::StoreState> state = (*db)->LoadState();
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->jobs.size(), 6u);
  std::map<std::string, int> succeeded;
  bool victim_ran = false;
  for (const store::RunRecord& run : state->runs) {
    if (run.state == store::RunState::kSucceeded) {
      EXPECT_TRUE(run.Complete()) << run.id;
      ++succeeded[run.job_id];
    }
    if (run.agent_id == "pilots.slurm-" + victim) {
      victim_ran = true;
    }
  }
  EXPECT_TRUE(victim_ran);
  for (const store::JobRecord& job : state->jobs) {
    EXPECT_EQ(job.state, store::JobState::kSucceeded) << job.id;
    EXPECT_EQ(succeeded[job.id], 1) << job.id;
  }
  slurm.Stop();
}

}  // namespace
}  // namespace orch::testing
