// End-to-end tests of `orch plan`: the real binary as a child process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/spec_text.h"
#include "tests/support/subprocess.h"

namespace orch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::OrchBinary;
using testing::ProcessResult;
using testing::RunProcess;
using ::testing::StartsWith;

namespace fs = std::filesystem;

std::string SlurpPlanFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class PlanCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-plan-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name) << content;
    return (dir_ / name).string();
  }

  ProcessResult Orch(std::vector<std::string> args, const std::string& cwd = "") {
    args.insert(args.begin(), OrchBinary());
    return RunProcess(args, std::chrono::seconds(30), cwd);
  }

  fs::path dir_;
};

TEST_F(PlanCommandTest, PrintsSummaryAndOneRowPerJob) {
  ProcessResult r = Orch({"plan", "examples/seed-replication.toml"}, ORCH_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("Experiment  seed-replication: "));
  EXPECT_THAT(r.out, HasSubstr("\nCells       8 (baseline + 7)\n"));
  EXPECT_THAT(r.out, HasSubstr("\nJobs        16\n"));
  EXPECT_THAT(r.out, HasSubstr("JOB          CELL "));
  EXPECT_THAT(r.out, HasSubstr(" kv=q8_0/f16            kjv-128  0       llama.cpp@v0.4.0 cpu "));
  EXPECT_EQ(r.err, "");
}

// CLI11 alone would give the mistyped option to SPEC and say "SPEC excludes --bundle".
TEST_F(PlanCommandTest, AMistypedOptionIsNamedBeforeAnyOtherComplaint) {
  ProcessResult r = Orch({"run", "--bundle", "plan.tar", "--model-dirr", "models"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("orch run: unknown option --model-dirr (did you mean "
                               "--model-dir?)"));
  EXPECT_THAT(r.err, Not(HasSubstr("excludes")));
  ProcessResult status = Orch({"status", "--watchh"});
  EXPECT_EQ(status.exit_code, 2);
  EXPECT_THAT(status.err, HasSubstr("orch status: unknown option --watchh (did you mean "
                                    "--watch?)"));
}

// The --json schema is a contract: compare against the checked-in golden document.
// Regenerate deliberately with ORCH_UPDATE_GOLDEN=1 after a documented schema change.
TEST_F(PlanCommandTest, JsonOutputMatchesGolden) {
  ProcessResult r = Orch({"plan", "--json", "examples/seed-replication.toml"}, ORCH_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path golden = fs::path(ORCH_SOURCE_DIR) / "tests/cli/testdata/seed-replication.plan.json";
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr) std::ofstream(golden) << r.out;
  EXPECT_EQ(r.out, SlurpPlanFile(golden));
}

// A bisection (docs/bisect.md) shows what to changes, the rule, the walk and its first
// round before anything runs.
TEST_F(PlanCommandTest, ABisectionShowsToTheWalkAndTheFirstRound) {
  ProcessResult r = Orch({"plan", "examples/bisect.toml"}, ORCH_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nFrom        engine=llama.cpp@v0.4.0 quant=f32 kv=f16 "
                               "attention=off tp=1 hardware=cpu threads=1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nTo          engine=llama.cpp@b8390 quant=q8_0 kv=q8_0/f16 "
                               "attention=on threads=2 (5 axes differ)\n"));
  EXPECT_THAT(r.out, HasSubstr("within 5% of KLD(to, from) or the repeat noise; at most 4 rounds"));
  EXPECT_THAT(r.out, HasSubstr("\nWalk        from -> from + engine -> from + engine + quant -> "
                               "to - attention - threads -> to - threads -> to\n"));
  EXPECT_THAT(r.out, HasSubstr("\nCells       14 (from + round 1: 13)\n"));
  EXPECT_THAT(r.out, HasSubstr("\nRepeats     from and to x2, other cells x1\n"));
  EXPECT_THAT(r.out,
              HasSubstr(" to - kv                  kjv-heldout 0       llama.cpp@b8390 cpu "));
}

TEST_F(PlanCommandTest, ForumGpuExamplePlansOnAMachineWithoutGpus) {
  ProcessResult r = Orch({"plan", "examples/forum-gpu.toml"}, ORCH_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nCells       11 (baseline + 10)\n"));
  EXPECT_THAT(r.out, HasSubstr("tp=4 "));
  EXPECT_THAT(r.out, HasSubstr("gpu:rtx-pro-6000-blackwell gpus>=4"));
}

TEST_F(PlanCommandTest, InvalidSpecListsEveryErrorAndExitsTwo) {
  std::string spec = testing::Replace(testing::ValidSpecText(), "tp = 1", "tp = 0");
  spec = testing::Replace(spec, "kind = \"generate\"", "kind = \"chat\"");
  std::string path = Write("bad.toml", spec);
  ProcessResult r = Orch({"plan", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err,
              HasSubstr(path + ":27:6: error: baseline.tp: tp must be in [1, 1024], got 0\n"));
  EXPECT_THAT(r.err, HasSubstr(path + ":18:8: error: workloads[1].kind: unknown workload kind"));
  EXPECT_THAT(r.err, HasSubstr("orch plan: 2 errors in " + path + "; nothing was written\n"));
}

TEST_F(PlanCommandTest, InvalidSpecWritesNothingAndKeepsAnExistingOutput) {
  std::string bad = Write("bad.toml", "[experiment\n");
  std::string out = Write("plan.json", "previous plan\n");
  ProcessResult r = Orch({"plan", bad, "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("error: TOML syntax error"));
  EXPECT_EQ(SlurpPlanFile(out), "previous plan\n");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2);  // no temporary left behind
}

TEST_F(PlanCommandTest, OutputFileHoldsTheJsonPlan) {
  std::string spec = Write("ok.toml", testing::ValidSpecText());
  std::string out = (dir_ / "plan.json").string();
  ProcessResult r = Orch({"plan", spec, "-o", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SlurpPlanFile(out), r.out);
  EXPECT_THAT(r.out, HasSubstr("\"schema\": \"orch.plan/1\""));
}

TEST_F(PlanCommandTest, InvalidSpecWithJsonPrintsErrorsAsJson) {
  std::string path =
      Write("bad.toml", testing::Replace(testing::ValidSpecText(), "tp = 1", "tp = 0"));
  ProcessResult r = Orch({"plan", "--json", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("\"schema\": \"orch.plan-errors/1\""));
  EXPECT_THAT(r.out, HasSubstr("\"field\": \"baseline.tp\""));
}

TEST_F(PlanCommandTest, MissingSpecFileIsAnOtherErrorExitOne) {
  ProcessResult r = Orch({"plan", (dir_ / "nope.toml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot open " + (dir_ / "nope.toml").string() +
                               ": No such file or directory"));
}

TEST_F(PlanCommandTest, WarningsComeLast) {
  std::string path =
      Write("warn.toml", testing::Replace(testing::ValidSpecText(), "engine = \"llama.cpp@v0.4.0\"",
                                          "engine = \"tgi@3.0\""));
  ProcessResult r = Orch({"plan", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t warning = r.out.find(": warning: baseline.engine: orch has no capability table");
  ASSERT_NE(warning, std::string::npos);
  EXPECT_GT(warning, r.out.find("sampler.seed=43"));
}

// A spec's text_file goes into the plan, which every agent receives: a symlink in the
// spec's folder must not smuggle /etc/passwd into it.
TEST_F(PlanCommandTest, RefusesATextFileThatLeadsOutOfTheSpecDirectory) {
  fs::create_symlink("/etc/passwd", dir_ / "notes.txt");
  std::string path = Write(
      "spec.toml", testing::Replace(testing::ValidSpecText(), "text = \"The quick brown fox\"",
                                    "text_file = \"notes.txt\""));
  ProcessResult r = Orch({"plan", "--json", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ":12:13: error: workloads[0].text_file: cannot read "
                                      "\"notes.txt\": \"notes.txt\" resolves to /etc/passwd, "
                                      "outside the spec's directory"));
  EXPECT_THAT(r.err, HasSubstr("move the file there, or pass --allow-outside-spec-dir"));
  EXPECT_THAT(r.out, Not(HasSubstr("root:")));
}

TEST_F(PlanCommandTest, AllowOutsideSpecDirReadsATextFileAboveTheSpec) {
  std::ofstream(dir_ / "shared.txt") << "shared text of a workload\n";
  fs::create_directories(dir_ / "exp");
  std::string path = Write(
      "exp/spec.toml", testing::Replace(testing::ValidSpecText(), "text = \"The quick brown fox\"",
                                        "text_file = \"../shared.txt\""));
  ProcessResult refused = Orch({"plan", path});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("\"../shared.txt\" climbs out of the spec's directory"));
  ProcessResult allowed = Orch({"plan", "--json", "--allow-outside-spec-dir", path});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_THAT(allowed.out, HasSubstr("shared text of a workload\\n"));
}

TEST_F(PlanCommandTest, RefusesATextFileThatIsAFifo) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  std::string path = Write(
      "spec.toml", testing::Replace(testing::ValidSpecText(), "text = \"The quick brown fox\"",
                                    "text_file = \"pipe\""));
  ProcessResult r = Orch({"plan", "--allow-outside-spec-dir", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("\"pipe\" is a FIFO, not a regular file"));
}

TEST_F(PlanCommandTest, HelpAndUsageErrors) {
  ProcessResult help = Orch({"plan", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--json"));
  EXPECT_THAT(help.out, HasSubstr("Exit status: 0 ok, 2 invalid spec"));
  ProcessResult top = Orch({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("plan"));
  ProcessResult usage = Orch({"plan"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, HasSubstr("SPEC is required"));
  ProcessResult unknown = Orch({"plan", "--frobnicate", "x.toml"});
  EXPECT_EQ(unknown.exit_code, 2);
}

// A server engine is planned like any other: its cells are checked against the
// declaration its driver prints (planner/declarations/llama-server.json), server-level
// axes included.
constexpr const char* kServerSpec = R"toml(
[experiment]
name = "servers"

[model]
name = "kjv-tiny"
file = "kjv-tiny-f32.gguf"
sha256 = "0000000000000000000000000000000000000000000000000000000000000001"

[[workloads]]
name = "verse"
kind = "teacher_forced"
text = "In the beginning God created the heaven and the earth."
positions = 8
capture = { top_logits = 8 }

[baseline]
engine = "llama-server@b8390"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
slots = 1

[alternatives]
slots = [4]
attention = ["on"]
)toml";

TEST_F(PlanCommandTest, PlansALlamaServerCellWithItsServerAxes) {
  ProcessResult r = Orch({"plan", Write("servers.toml", kServerSpec)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nCells       3 (baseline + 2)\n"));
  EXPECT_THAT(r.out, HasSubstr("llama-server@b8390"));
  EXPECT_THAT(r.err, Not(HasSubstr("warning")));  // a known engine: checked, not warned about
}

TEST_F(PlanCommandTest, RefusesWhatTheLlamaServerDriverDeclaresItCannotRun) {
  std::string spec = testing::Replace(kServerSpec, "slots = [4]", "slots = [0]");
  spec = testing::Replace(spec, "kv = \"f16\"", "kv = \"q8_0\"");
  ProcessResult r = Orch({"plan", Write("servers.toml", spec)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("slots"));
  EXPECT_THAT(r.err, HasSubstr("flash attention"));
}

}  // namespace
}  // namespace orch
