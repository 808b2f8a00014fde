// `orch bisect` refuses what it cannot bisect before anything starts, and `orch bisect A B`
// bisects two jobs of a store that `orch run` filled with the test engine: the real
// binary as a child process (the real engine: tests/e2e/bisect_example_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"
#include "store/rocksdb_store.h"
#include "tests/support/subprocess.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::OrchBinary;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TestDriverBinary;

TEST(BisectCommandTest, ASpecWithoutBisectIsRefusedAndNothingStarts) {
  const fs::path data =
      fs::temp_directory_path() / ("orch-bisect-cli-" + std::to_string(::getpid()));
  fs::remove_all(data);
  ProcessResult r = RunProcess(
      {OrchBinary(), "bisect", "examples/seed-replication.toml", "--data-dir", data.string()},
      std::chrono::seconds(30), ORCH_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("orch bisect: examples/seed-replication.toml has no [bisect] "
                               "section (docs/bisect.md); orch run runs a one-axis-at-a-time "
                               "spec"));
  EXPECT_FALSE(fs::exists(data)) << "no coordinator, no store";
}

TEST(BisectCommandTest, AnInvalidBisectionIsRefusedWithItsField) {
  const fs::path dir =
      fs::temp_directory_path() / ("orch-bisect-bad-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "spec.toml") << R"toml([experiment]
name = "bad"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "w"
kind = "teacher_forced"
text = "In the beginning"
positions = 4

[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu" }
to = { quant = "f32" }
)toml";
  ProcessResult r = RunProcess(
      {OrchBinary(), "bisect", (dir / "spec.toml").string(), "--data-dir", (dir / "data").string()},
      std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("error: bisect.to: bisect.to gives every axis the value "
                               "bisect.from gives it: there is no difference to explain"));
  EXPECT_FALSE(fs::exists(dir / "data"));
  fs::remove_all(dir);
}

// Two experiments run with the test engine (its rows are seeded by the whole coordinate:
// any axis moves them all): "stored", workloads w1 and w2 under the baseline (x2) and
// knob.variant=1, and "other", whose coordinate has knob.extra besides.
class BisectFromStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("orch-bisect-store-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    Run("stored", "", "knob.variant = [1]");
    Run("other", "knob.extra = 1\n", "knob.variant = [1]");
    Result<std::unique_ptr<store::Store>> db =
        store::OpenRocksDbStore(store::RocksDbPathInDataDir(Data()), store::RocksDbOptions{});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<store::StoreState> state = (*db)->LoadState();
    ASSERT_TRUE(state.ok());
    jobs_ = new std::map<std::string, std::string>;
    host_ = new std::string(state->runs.front().host_fingerprint_id);
    for (const store::PlanRecord& plan : state->plans) {
      Result<plan_document::Document> doc = plan_document::ReadPlanJson(plan.json);
      ASSERT_TRUE(doc.ok());
      for (const plan_document::Job& job : doc->jobs) {
        (*jobs_)[plan.experiment + "/" + job.cell + "/" + doc->workloads[job.workload].name + "/" +
                 std::to_string(job.repeat)] = job.id;
      }
    }
  }
  static void TearDownTestSuite() {
    if (!HasFailure()) fs::remove_all(*dir_);
    delete dir_;
    delete jobs_;
    delete host_;
  }

  static std::string Data() { return (*dir_ / "data").string(); }
  // The job id of experiment/cell/workload/repeat.
  static std::string JobId(const std::string& key) {
    EXPECT_EQ(jobs_->count(key), 1u) << key;
    return jobs_->count(key) ? jobs_->at(key) : "";
  }
  static ProcessResult Bisect(std::vector<std::string> args) {
    std::vector<std::string> command{OrchBinary(), "bisect"};
    command.insert(command.end(), args.begin(), args.end());
    for (const std::string& more :
         {std::string("--data-dir"), Data(), std::string("--driver"),
          "test-engine@1=" + TestDriverBinary(), std::string("--timeout"), std::string("120")}) {
      command.push_back(more);
    }
    return RunProcess(command, std::chrono::seconds(150));
  }

 private:
  static void Run(const std::string& name, const std::string& extra,
                  const std::string& alternatives) {
    std::ofstream(*dir_ / (name + ".toml"))
        << "[experiment]\nname = \"" << name << "\"\n\n"
        << "[model]\nsynth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"\n\n"
        << "[[workloads]]\nname = \"w1\"\nkind = \"teacher_forced\"\n"
        << "text = \"hello hello hello\"\npositions = 6\n\n"
        << "[[workloads]]\nname = \"w2\"\nkind = \"teacher_forced\"\n"
        << "text = \"world world world\"\npositions = 6\n\n"
        << "[baseline]\nengine = \"test-engine@1\"\nquant = \"f32\"\nkv = \"f16\"\n"
        << "attention = \"off\"\ntp = 1\nhardware = \"cpu\"\nknob.positions = 6\n"
        << "knob.variant = 0\n"
        << extra << "\n[alternatives]\n"
        << alternatives << "\n";
    ProcessResult run =
        RunProcess({OrchBinary(), "run", (*dir_ / (name + ".toml")).string(), "--data-dir", Data(),
                    "--timeout", "120", "--driver", "test-engine@1=" + TestDriverBinary()},
                   std::chrono::seconds(150));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  }

  static fs::path* dir_;
  static std::map<std::string, std::string>* jobs_;

 protected:
  static std::string* host_;  // the host fingerprint id every run has
};

fs::path* BisectFromStoreTest::dir_ = nullptr;
std::map<std::string, std::string>* BisectFromStoreTest::jobs_ = nullptr;
std::string* BisectFromStoreTest::host_ = nullptr;

TEST_F(BisectFromStoreTest, TwoJobsOneAxisApartAreBisectedAndTheirDivergenceIsReproduced) {
  const std::string a = JobId("stored/baseline/w1/0");
  const std::string b = JobId("stored/knob.variant=1/w1/0");
  // By the 12 characters orch history shows.
  ProcessResult r = Bisect({a.substr(0, 12), b.substr(0, 12), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string name = "bisect-" + a.substr(0, 12) + "-" + b.substr(0, 12);
  const fs::path spec = fs::path(Data()) / (name + ".toml");
  EXPECT_THAT(r.err,
              HasSubstr("orch bisect: the spec of this bisection is " + spec.string() +
                        " (orch plan shows its walk; orch bisect " + spec.string() +
                        " --allow-outside-spec-dir --data-dir " + Data() + " runs it as it is)"));
  EXPECT_TRUE(fs::exists(spec));
  nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["schema"], "orch.bisect/1");
  EXPECT_EQ(out["experiment"], name);
  EXPECT_EQ(out["verdict"], "explained");
  EXPECT_EQ(out["explaining"], nlohmann::json::array({"knob.variant"}));
  const nlohmann::json& origin = out["origin"];
  EXPECT_EQ(origin["a"]["job"], a);
  EXPECT_EQ(origin["b"]["job"], b);
  EXPECT_EQ(origin["b"]["cell"], "knob.variant=1");
  EXPECT_EQ(origin["same_coordinate"], false);
  EXPECT_EQ(origin["same_host"], true);
  EXPECT_EQ(origin["same_stream"], false);
  // One machine, one deterministic engine: the bisection's ends rerun A and B exactly.
  ASSERT_TRUE(origin["kld_mean"].is_number());
  EXPECT_GT(origin["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(out["total_kld"].get<double>(), origin["kld_mean"].get<double>());
  EXPECT_EQ(origin["reproduced_share"].get<double>(), 1.0);

  // Again: the same spec, every job kept; the text names both ends and the verdict.
  ProcessResult again = Bisect({a, b});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("already submitted"));
  EXPECT_THAT(again.out, HasSubstr("orch bisect: coordinator tcp://127.0.0.1:"));
  EXPECT_THAT(again.out + again.err, Not(HasSubstr("orch run:")));
  EXPECT_THAT(again.out, HasSubstr("bisection: knob.variant explains the divergence"));
  EXPECT_THAT(again.out, HasSubstr("from (" + a + ", A): run "));
  EXPECT_THAT(again.out, HasSubstr("to (" + b + ", B): run "));
  EXPECT_THAT(again.out, HasSubstr("hosts: A and B ran on the same host"));
  EXPECT_THAT(again.out, Not(HasSubstr("they differ in"))) << "one engine build";

  // The spec as it is, as the first line says.
  ProcessResult as_is = Bisect({spec.string(), "--allow-outside-spec-dir"});
  ASSERT_EQ(as_is.exit_code, 0) << as_is.out << as_is.err;
  EXPECT_THAT(as_is.out, HasSubstr(name + ": 4 jobs, already submitted"));

  // An edited spec is the user's: left alone.
  std::ofstream(spec, std::ios::app) << "# edited\n";
  ProcessResult edited = Bisect({a, b});
  EXPECT_EQ(edited.exit_code, 2) << edited.out << edited.err;
  EXPECT_THAT(edited.err, HasSubstr(spec.string() +
                                    " exists and differs from the spec A and B "
                                    "give: run orch bisect " +
                                    spec.string() + " to use it as it is, or remove it"));
}

TEST_F(BisectFromStoreTest, TwoRunsOfOneCoordinateNeedNoBisection) {
  ProcessResult r =
      Bisect({JobId("stored/baseline/w2/0"), JobId("stored/baseline/w2/1").substr(0, 8)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("A and B where they ran: the same stream, bit for bit"));
  EXPECT_THAT(r.out, HasSubstr("the rest: host/hardware: A and B ran the same coordinate, "
                               "workload and model; nothing to bisect"));
  EXPECT_THAT(r.out, Not(HasSubstr("round 1")));

  // JOB@HOST: the job's run on that host (as orch report --by-host names hosts).
  ASSERT_FALSE(host_->empty());
  const std::string job = JobId("stored/baseline/w2/0");
  ProcessResult on_host = Bisect({job.substr(0, 12) + "@" + *host_, job + "@" + *host_});
  EXPECT_EQ(on_host.exit_code, 2) << on_host.out << on_host.err;
  EXPECT_THAT(on_host.err, HasSubstr("A and B are the same run, " + job.substr(0, 12) + "-"));
  ProcessResult elsewhere = Bisect({job + "@fp-elsewhere", JobId("stored/baseline/w2/1")});
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.out << elsewhere.err;
  EXPECT_THAT(elsewhere.err, HasSubstr("A: job " + job.substr(0, 12) +
                                       " has no finished run on fp-elsewhere; it ran on " + *host_ +
                                       " (lab, agent local-"));
}

TEST_F(BisectFromStoreTest, WhatCannotBeBisectedIsRefusedNamingTheSideAndTheValue) {
  const std::string a = JobId("stored/baseline/w1/0");
  ProcessResult unknown = Bisect({a, "0123456789abcdef"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out << unknown.err;
  EXPECT_THAT(unknown.err, HasSubstr("orch bisect: B: no run or job 0123456789abcdef in the store "
                                     "at " +
                                     Data()));
  ProcessResult short_id = Bisect({a.substr(0, 4), a});
  EXPECT_EQ(short_id.exit_code, 2);
  EXPECT_THAT(short_id.err, HasSubstr("A: no run or job " + a.substr(0, 4) + " in the store at " +
                                      Data() + "; a job id's start names it from 6 characters on"));
  ProcessResult workloads = Bisect({a, JobId("stored/knob.variant=1/w2/0")});
  EXPECT_EQ(workloads.exit_code, 2);
  EXPECT_THAT(workloads.err, HasSubstr("A and B ran two workloads (A w1, digest "));
  ProcessResult axis = Bisect({a, JobId("other/knob.variant=1/w1/0")});
  EXPECT_EQ(axis.exit_code, 2);
  EXPECT_THAT(axis.err, HasSubstr("B's coordinate gives axis knob.extra = 1, which A's does not "
                                  "name"));
  ProcessResult flags =
      RunProcess({OrchBinary(), "bisect", "examples/bisect.toml", "--tolerance", "0.2"},
                 std::chrono::seconds(30), ORCH_SOURCE_DIR);
  EXPECT_EQ(flags.exit_code, 2);
  EXPECT_THAT(flags.err, HasSubstr("orch bisect: --tolerance is for orch bisect A B; a spec sets "
                                   "its bisection in [bisect]"));
}

TEST_F(BisectFromStoreTest, PlanOnlyWritesTheSpecAndShowsTheWalkWithoutRunning) {
  const std::string a = JobId("other/baseline/w2/0");
  const std::string b = JobId("other/knob.variant=1/w2/0");
  ProcessResult r = Bisect({a, b, "--plan", "--name", "planned-only"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("planned-only.toml (orch plan shows its walk"));
  EXPECT_THAT(r.out, HasSubstr("Walk        from -> to"));
  EXPECT_THAT(r.out, Not(HasSubstr("coordinator")));
  ProcessResult plan = RunProcess(
      {OrchBinary(), "plan", (fs::path(Data()) / "planned-only.toml").string(), "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  nlohmann::json doc = nlohmann::json::parse(plan.out);
  EXPECT_EQ(doc["bisect"]["axes"], nlohmann::json::array({"knob.variant"}));
  EXPECT_EQ(doc["baseline"]["knob.extra"], 1);
}

}  // namespace
}  // namespace orch
