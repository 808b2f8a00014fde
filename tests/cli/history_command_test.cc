// `orch history` and `orch events` as an admin runs them: the real binary on a real
// RocksDB store on disk, and `orch events --follow` as a real process stopped by SIGINT.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/child_process.h"
#include "cli/history.h"
#include "coordinator/plan_catalog.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "store/rocksdb_store.h"
#include "tests/support/map_source_reader.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kT0 = 1'796'000'000'000;  // ms since the Unix epoch

std::string HistorySpecJson() {
  std::string spec = R"toml(
[experiment]
name = "exp"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "readme"
kind = "teacher_forced"
text = "The quick brown fox"
positions = 16

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "q4_0"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1

[repeats]
baseline = 2
cells = 1
)toml";
  MapSourceReader reader;
  planner::PlanOutcome outcome = planner::PlanSpec(spec, "spec.toml", reader);
  return planner::PlanToJson(*outcome.plan);
}

std::string HistorySlurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class HistoryCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    store_ = std::move(store::OpenRocksDbStore(store::RocksDbPathInDataDir(data()), {})).value();
    std::string json = HistorySpecJson();
    Result<coordinator::ParsedPlan> parsed = coordinator::ParsePlanJson(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    jobs_ = coordinator::ToJobRecords(*parsed, kT0);
    ASSERT_TRUE(store_->PutPlan(coordinator::ToPlanRecord(*parsed, json), jobs_).ok());
    Event("agent.registered", "box-a", "host gpu-01, cpu, 1 slot, engines x, 0 model files");
    // The second job ran first: history sorts by start, not by id.
    Run(jobs_[1], "run-b", kT0 + 1000, kT0 + 61'000, store::RunState::kSucceeded, "");
    Run(jobs_[0], "run-a", kT0 + 5000, kT0 + 6500, store::RunState::kFailed,
        "driver exited 1\nstack trace line");
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  std::string data() const { return (dir_ / "data").string(); }

  void Event(const std::string& kind, const std::string& subject, const std::string& detail) {
    ASSERT_TRUE(store_->AppendEvent({0, kT0, kind, subject, detail}).ok());
  }
  void Run(store::JobRecord job, const std::string& id, std::int64_t start, std::int64_t end,
           store::RunState state, const std::string& error) {
    job.attempts = 1;
    job.current_run_id = id;
    job.state = store::JobState::kRunning;
    store::RunRecord run;
    run.id = id;
    run.job_id = job.id;
    run.agent_id = "box-a";
    run.assigned_at_ms = start;
    ASSERT_TRUE(store_->Apply({job, run, {}}).ok());
    job.state = state == store::RunState::kSucceeded ? store::JobState::kSucceeded
                                                     : store::JobState::kFailed;
    store::RunOutcome outcome{state, 0, error, 0, "", end};
    ASSERT_TRUE(store_->FinishRun(id, outcome, job).ok());
  }

  fs::path dir_ = fs::temp_directory_path() / ("orch-history-cmd-" + std::to_string(::getpid()));
  std::unique_ptr<store::Store> store_;
  std::vector<store::JobRecord> jobs_;
};

TEST_F(HistoryCommandTest, ListsEveryRunByStartWithHostTimesDurationAndTheErrorsFirstLine) {
  ProcessResult history = RunProcess({OrchBinary(), "history", "--data-dir", data()});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  std::vector<std::string> lines;
  std::istringstream in(history.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << history.out;
  EXPECT_THAT(lines[0], HasSubstr("SUBMITTED"));
  EXPECT_THAT(lines[1], HasSubstr("run-b"));
  EXPECT_THAT(lines[1], HasSubstr(jobs_[1].id.substr(0, 12)));
  EXPECT_THAT(lines[1], HasSubstr("gpu-01"));
  EXPECT_THAT(lines[1], HasSubstr("readme"));
  EXPECT_THAT(lines[1], HasSubstr("1m00s"));
  EXPECT_THAT(lines[1], HasSubstr("succeeded"));
  EXPECT_THAT(lines[1], HasSubstr(cli::FormatTime(kT0)));  // submitted
  EXPECT_THAT(lines[2], HasSubstr("run-a"));
  EXPECT_THAT(lines[2], HasSubstr("1.5s"));
  EXPECT_THAT(lines[2], HasSubstr("failed: driver exited 1"));
  EXPECT_THAT(history.out, Not(HasSubstr("stack trace")));

  ProcessResult json = RunProcess({OrchBinary(), "history", "exp", "--data-dir", data(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "orch.history/1");
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["run_id"], "run-b");
  EXPECT_EQ(doc["runs"][0]["submitted_at_ms"], kT0);
  EXPECT_EQ(doc["runs"][0]["elapsed_ms"], 60'000);
  EXPECT_EQ(doc["runs"][1]["error"], "driver exited 1");
}

TEST_F(HistoryCommandTest, FiltersByStateAndTimeAndRefusesUnknownValuesNamingThem) {
  ProcessResult failed =
      RunProcess({OrchBinary(), "history", "--data-dir", data(), "--state", "failed"});
  ASSERT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_THAT(failed.out, HasSubstr("run-a"));
  EXPECT_THAT(failed.out, Not(HasSubstr("run-b")));

  ProcessResult later = RunProcess(
      {OrchBinary(), "history", "--data-dir", data(), "--since", cli::FormatTime(kT0 + 3000)});
  ASSERT_EQ(later.exit_code, 0) << later.err;
  EXPECT_THAT(later.out, HasSubstr("run-a"));
  EXPECT_THAT(later.out, HasSubstr("run-b"));  // ended after it
  ProcessResult none = RunProcess(
      {OrchBinary(), "history", "--data-dir", data(), "--since", cli::FormatTime(kT0 + 62'000)});
  EXPECT_EQ(none.out, "no runs\n");

  ProcessResult state =
      RunProcess({OrchBinary(), "history", "--data-dir", data(), "--state", "ok"});
  EXPECT_EQ(state.exit_code, 2);
  EXPECT_THAT(state.err, HasSubstr("--state ok: not a run state (one of assigned, running"));
  ProcessResult since = RunProcess({OrchBinary(), "history", "--data-dir", data(), "--since", "x"});
  EXPECT_EQ(since.exit_code, 2);
  EXPECT_THAT(since.err, HasSubstr("--since x: not a duration"));
  ProcessResult typo = RunProcess({OrchBinary(), "history", "exq", "--data-dir", data()});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("no experiment exq (did you mean exp?); the store holds: exp"));
}

TEST_F(HistoryCommandTest, EventsPrintsTheLogFromASequenceNumber) {
  Event("agent.drained", "box-a", "no runs in flight");
  ProcessResult all = RunProcess({OrchBinary(), "events", "--data-dir", data()});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("1  " + cli::FormatTime(kT0) + "  agent.registered  box-a  host"));
  EXPECT_THAT(all.out, HasSubstr("2  " + cli::FormatTime(kT0) + "  agent.drained  box-a"));

  ProcessResult json =
      RunProcess({OrchBinary(), "events", "--data-dir", data(), "--since", "2", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json line = nlohmann::json::parse(json.out);
  EXPECT_EQ(line["seq"], 2);
  EXPECT_EQ(line["kind"], "agent.drained");
  EXPECT_EQ(line["detail"], "no runs in flight");
}

TEST_F(HistoryCommandTest, FollowPrintsNewEventsAsTheyAreWrittenAndEndsCleanlyOnCtrlC) {
  fs::path log = dir_ / "follow.log";
  Result<cli::ChildProcess> follow = cli::ChildProcess::Start(
      {OrchBinary(), "events", "--data-dir", data(), "--follow", "--interval", "100"},
      log.string());
  ASSERT_TRUE(follow.ok()) << follow.status().ToString();
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 400 && follow->running(); ++i) {  // at most 20 s
      if (HistorySlurp(log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  ASSERT_TRUE(wait_for("agent.registered")) << HistorySlurp(log);
  // Written by this (primary) instance while the follower reads as a secondary.
  Event("agent.departed", "box-a", "connection closed");
  ASSERT_TRUE(wait_for("agent.departed  box-a  connection closed")) << HistorySlurp(log);
  follow->Signal(SIGINT);
  EXPECT_EQ(follow->WaitFor(std::chrono::seconds(20)), 0) << HistorySlurp(log);
}

}  // namespace
}  // namespace orch::testing
