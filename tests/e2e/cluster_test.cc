// End to end with the real binaries on 127.0.0.1: a coordinator daemon, agent daemons
// and the test driver, real ZeroMQ, real RocksDB, real processes killed with SIGKILL.
// Every wait is bounded; every process is stopped by pid (LocalCluster).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>

#include "base/sha256.h"
#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kJobs = 30;
constexpr int kPositions = 40;

int Count(const std::optional<nlohmann::json>& progress, const char* field) {
  return progress ? progress->value(field, -1) : -1;
}

// Opens the store the coordinator left behind and checks, for every job of the
// experiment: it succeeded, exactly one of its runs is complete, and that run holds every
// position once (no acknowledged chunk lost, nothing duplicated).
void ExpectEveryJobHasExactlyOneCompleteRun(const LocalCluster& cluster,
                                            const std::string& experiment) {
  Result<std::unique_ptr<store::Store>> opened = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(cluster.data_dir().string()), store::RocksDbOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& db = **opened;
  Result<store::StoreState> state = db.LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  std::map<std::string, int> complete_runs;
  for (const store::RunRecord& run : state->runs) {
    if (run.Complete() && run.state == store::RunState::kSucceeded) ++complete_runs[run.job_id];
  }
  int jobs = 0;
  for (const store::JobRecord& job : state->jobs) {
    if (job.experiment != experiment) continue;
    ++jobs;
    EXPECT_EQ(job.state, store::JobState::kSucceeded) << job.id;
    EXPECT_EQ(complete_runs[job.id], 1) << job.id;
    // Every run names the host fingerprint its agent registered, stored once.
    Result<store::RunRecord> run = db.GetRun(job.current_run_id);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_TRUE(run->host_fingerprint_id.starts_with("fp-")) << run->host_fingerprint_id;
    EXPECT_TRUE(db.GetFingerprint(run->host_fingerprint_id).ok()) << run->host_fingerprint_id;
    std::set<std::uint64_t> positions;
    int records = 0;
    Status scanned =
        db.ScanDigests(job.current_run_id, 0, [&](std::uint64_t position, std::string_view) {
          positions.insert(position);
          ++records;
          return true;
        });
    EXPECT_TRUE(scanned.ok()) << scanned.ToString();
    EXPECT_EQ(records, kPositions) << job.id;
    EXPECT_EQ(positions.size(), static_cast<std::size_t>(kPositions)) << job.id;
  }
  EXPECT_EQ(jobs, kJobs);
}

void Submit(LocalCluster& cluster, const std::string& experiment, int delay_ms) {
  std::ofstream(cluster.dir() / "spec.toml")
      << TestEngineSpec(experiment, kJobs, kPositions, delay_ms);
  ProcessResult r = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.Logs();
}

TEST(ClusterTest, KillingAnAgentMidRunLosesNoJob) {
  LocalCluster cluster("agent-kill");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  for (const char* id : {"a1", "a2", "a3"}) ASSERT_NO_FATAL_FAILURE(cluster.StartAgent(id));
  ASSERT_NO_FATAL_FAILURE(Submit(cluster, "e2e-agent-kill", 10));

  bool midway = LocalCluster::WaitUntil(
      [&] {
        auto p = cluster.Progress("e2e-agent-kill");
        return Count(p, "succeeded") >= 3 && Count(p, "running") >= 1;
      },
      60s);
  ASSERT_TRUE(midway) << cluster.Logs();
  cluster.agent("a2").Signal(SIGKILL);

  bool done = LocalCluster::WaitUntil(
      [&] { return Count(cluster.Progress("e2e-agent-kill"), "succeeded") == kJobs; }, 120s);
  ASSERT_TRUE(done) << cluster.Status().value_or(nlohmann::json()).dump() << cluster.Logs();
  EXPECT_EQ(Count(cluster.Progress("e2e-agent-kill"), "failed"), 0);
  EXPECT_EQ(cluster.coordinator().Stop(10s), 0);
  ExpectEveryJobHasExactlyOneCompleteRun(cluster, "e2e-agent-kill");
}

TEST(ClusterTest, RestartedCoordinatorFinishesThePlanFromItsStore) {
  LocalCluster cluster("coord-kill");
  std::string listen = "tcp://127.0.0.1:" + std::to_string(LocalCluster::FreePort());
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator(listen));
  for (const char* id : {"a1", "a2", "a3"}) ASSERT_NO_FATAL_FAILURE(cluster.StartAgent(id));
  ASSERT_NO_FATAL_FAILURE(Submit(cluster, "e2e-coord-kill", 10));

  bool midway = LocalCluster::WaitUntil(
      [&] {
        auto p = cluster.Progress("e2e-coord-kill");
        return Count(p, "succeeded") >= 5 && Count(p, "running") >= 1;
      },
      60s);
  ASSERT_TRUE(midway) << cluster.Logs();
  cluster.coordinator().Signal(SIGKILL);
  ASSERT_TRUE(cluster.coordinator().WaitFor(10s).has_value());

  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator(listen));
  bool done = LocalCluster::WaitUntil(
      [&] { return Count(cluster.Progress("e2e-coord-kill"), "succeeded") == kJobs; }, 120s);
  ASSERT_TRUE(done) << cluster.Status().value_or(nlohmann::json()).dump() << cluster.Logs();
  EXPECT_EQ(cluster.coordinator().Stop(10s), 0);
  ExpectEveryJobHasExactlyOneCompleteRun(cluster, "e2e-coord-kill");
}

}  // namespace
}  // namespace orch::testing

namespace orch::testing {
namespace {

using ::testing::HasSubstr;

// Regression: `orch submit` of a spec whose model file is not its declared SHA-256 said
// only that no agent holds that hash, though the submitter had the file at hand. It now
// says the file's own hash beside the declared one, as `orch run` does.
TEST(ClusterTest, SubmitOfAModelFileWhoseHashIsNotTheSpecsSaysBothHashes) {
  LocalCluster cluster("e2e-submit-hash");
  cluster.StartCoordinator("tcp://127.0.0.1:*");
  const std::string content = "these bytes are not the model the spec declares";
  std::ofstream(cluster.dir() / "model.gguf") << content;
  std::string spec = TestEngineSpec("e2e-submit-hash", 3, 4, 0);
  const std::string synth =
      "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"";
  ASSERT_NE(spec.find(synth), std::string::npos);
  spec.replace(spec.find(synth), synth.size(),
               "name = \"m\"\nfile = \"model.gguf\"\nsha256 = \"" + std::string(64, 'a') + "\"");
  std::ofstream(cluster.dir() / "spec.toml") << spec;
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_THAT(submitted.err, HasSubstr("3 jobs can run on no connected agent"));
  EXPECT_THAT(submitted.err,
              HasSubstr("orch submit: the spec's model file model.gguf has SHA-256 " +
                        Sha256Hex(content) + ", but model.sha256 is " + std::string(64, 'a')))
      << submitted.err;
}

// Through the real CLI against a real coordinator: `orch submit` names the jobs no
// connected agent can run, `orch status --jobs` gives each job's reason, an agent that
// joins runs them, `orch experiments` counts them and `orch retry` runs a failed job again.
TEST(ClusterTest, SubmitStatusJobsExperimentsAndRetryTalkAboutEveryJob) {
  LocalCluster cluster("e2e-jobs");
  cluster.StartCoordinator("tcp://127.0.0.1:*");
  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec("e2e-jobs", 3, 4, 0);
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_THAT(submitted.err, HasSubstr("3 jobs can run on no connected agent"));
  EXPECT_THAT(submitted.err, HasSubstr("no agent connected"));

  ProcessResult jobs = cluster.Client({"status", "--jobs", "e2e-jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_THAT(jobs.out, HasSubstr("CELL"));
  EXPECT_THAT(jobs.out, HasSubstr("knob.variant=1"));
  EXPECT_THAT(jobs.out, HasSubstr("no agent connected"));

  cluster.StartAgent("agent-1");
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> p = cluster.Progress("e2e-jobs");
        return p && (*p)["succeeded"] == 3;
      },
      std::chrono::seconds(60)))
      << cluster.Logs();
  ProcessResult listed = cluster.Client({"experiments"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("EXPERIMENT"));
  EXPECT_THAT(listed.out, HasSubstr("e2e-jobs"));

  ProcessResult nothing = cluster.Client({"retry", "e2e-jobs", "--failed"});
  EXPECT_EQ(nothing.exit_code, 0) << nothing.err;
  EXPECT_THAT(nothing.out, HasSubstr("0 jobs queued again"));
  ProcessResult unknown = cluster.Client({"retry", "no-such-experiment"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no experiment no-such-experiment"));
  std::optional<nlohmann::json> status = cluster.Status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE((*status)["experiments"][0]["eta_ms"].is_number()) << "done: the ETA is known";
  EXPECT_EQ((*status)["agents"][0]["slots"], 1);
}

}  // namespace
}  // namespace orch::testing
