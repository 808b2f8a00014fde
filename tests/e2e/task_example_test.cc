// A task workload end to end on the real engine (docs/tasks.md), with both committed
// trained models: `orch run` of a spec whose workload is a case file (cloze cases of the
// King James model and two multiple-choice cases; tool calls of the tool-call model), then
// `orch report --json`. Each case ran as its own jobs, the report judged each run's
// generated text with that case's checks, and each choice was scored by its
// log-likelihood after the prompt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "task/case_file.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

std::string FirstLines(const fs::path& path, int count) {
  std::ifstream in(path);
  std::string out, line;
  for (int i = 0; i < count && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

constexpr char kChoices[] =
    R"({"id": "mc-lord", "prompt": "And the", "choices": [" LORD", " banana"], "answer": 0})"
    "\n"
    R"({"id": "mc-wrong", "prompt": "And the", "choices": [" LORD", " banana"], "answer": 1})"
    "\n";

struct SpecModel {
  std::string name, file, sha256;
};

// One task workload over `cases.jsonl`, the example baseline and one alternative cell.
std::string TaskE2eSpec(const SpecModel& model, const std::string& workload, int max_tokens,
                        const std::string& alternative) {
  return R"toml([experiment]
name = "task-e2e"

[model]
name = ")toml" +
         model.name + "\"\nfile = \"" + model.file + "\"\nsha256 = \"" + model.sha256 +
         "\"\n\n[[workloads]]\nname = \"" + workload +
         "\"\nkind = \"task\"\ncases_file = \"cases.jsonl\"\nmax_tokens = " +
         std::to_string(max_tokens) + R"toml(
capture = { top_logits = 20, full_every = 1 }

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
sampler.seed = 42
sampler.temperature = 0.0

[alternatives]
)toml" + alternative +
         "\n";
}

// Every generated case's runs, as the report shows them: both repeats gave one text (an
// exact coordinate reruns bit for bit) and the pass shown is that case's checks applied
// to that text. Returns the passes counted.
int CheckJudgedRuns(const json& cell, const std::vector<task::TaskCase>& cases);

const json* CaseOf(const json& cell, const std::string& id) {
  for (const json& c : cell["cases_detail"])
    if (c["case"] == id) return &c;
  ADD_FAILURE() << "no case " << id;
  return nullptr;
}

// An empty folder for one test's files, named after `prefix` and this process.
fs::path FreshDir(const std::string& prefix) {
  const fs::path dir = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// `orch run` of DIR/spec.toml (its cases beside it, its store in DIR/data), whose last
// progress line must hold `succeeded`, then `orch report --json`: its one task in *task.
void RunAndReportTask(const fs::path& dir, const std::string& succeeded, json* task) {
  const std::string data = (dir / "data").string();
  ProcessResult run =
      RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--allow-outside-spec-dir",
                  "--data-dir", data, "--timeout", "150"},
                 std::chrono::seconds(180), dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(succeeded));
  ProcessResult report = RunProcess(
      {OrchBinary(), "report", "task-e2e", "--json", "--data-dir", data}, std::chrono::seconds(60));
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(r.is_discarded()) << report.out;
  ASSERT_EQ(r["tasks"].size(), 1u);
  *task = r["tasks"][0];
}

TEST(TaskExampleTest, EachCaseRunsOnTheRealEngineAndTheReportJudgesItsOwnOutput) {
  const fs::path dir = FreshDir("orch-task-e2e-");
  const fs::path examples = fs::path(ORCH_SOURCE_DIR) / "examples";
  const std::string cases = FirstLines(examples / "tasks/kjv-cloze.jsonl", 6) + kChoices;
  std::ofstream(dir / "cases.jsonl") << cases;
  std::ofstream(dir / "spec.toml")
      << TaskE2eSpec({"kjv-tiny", (examples / "models/kjv-tiny-f32.gguf").string(),
                      "2edb568f0c7576b5b0b77ab7223bf1eb53c47639d55fd53ab4ddbc35b48a7710"},
                     "cloze", 4, R"(quant = ["q4_0"])");
  // 6 generate cases and 2 x 2 choices, in the baseline twice and the q4_0 cell once.
  json task;
  RunAndReportTask(dir, "[30/30] succeeded 30", &task);
  if (HasFatalFailure()) return;
  EXPECT_EQ(task["name"], "cloze");
  EXPECT_TRUE(task["multiple_choice"].get<bool>());
  const json& baseline = task["baseline"];
  EXPECT_EQ(baseline["cases"], 8);
  EXPECT_EQ(baseline["cases_planned"], 8);
  EXPECT_EQ(baseline["repeats"], 2);
  EXPECT_EQ(baseline["trials"], 16);

  Result<std::vector<task::TaskCase>> parsed = task::ParseCaseFile(cases, "cases.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const int passes = CheckJudgedRuns(baseline, *parsed);
  EXPECT_EQ(baseline["passes"], passes);
  // The trained model scores " LORD" far above " banana" after "And the": the case whose
  // answer is " LORD" passes, the one whose answer is " banana" fails.
  const json* lord = CaseOf(baseline, "mc-lord");
  const json* wrong = CaseOf(baseline, "mc-wrong");
  ASSERT_TRUE(lord != nullptr && wrong != nullptr);
  EXPECT_TRUE((*lord)["pass"].get<bool>()) << lord->dump();
  EXPECT_FALSE((*wrong)["pass"].get<bool>()) << wrong->dump();

  ASSERT_EQ(task["cells"].size(), 1u);
  const json& q4 = task["cells"][0];
  EXPECT_EQ(q4["label"], "quant=q4_0");
  EXPECT_EQ(q4["cases"], 8);
  EXPECT_GT(q4["kld"]["n"].get<int>(), 0) << "the cell's digests were compared with the baseline's";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

int CheckJudgedRuns(const json& cell, const std::vector<task::TaskCase>& cases) {
  int passes = 0;
  for (const task::TaskCase& c : cases) {
    const json* detail = CaseOf(cell, c.id);
    if (detail == nullptr) continue;
    EXPECT_TRUE((*detail)["repeats_agree"].get<bool>()) << c.id;
    passes += (*detail)["passes"].get<int>();
    if (c.multiple_choice()) continue;
    for (const json& run_shown : (*detail)["runs"]) {
      const std::string text = run_shown["text"];
      EXPECT_FALSE(text.empty()) << c.id;
      EXPECT_EQ(run_shown["pass"].get<bool>(), task::EvaluateCase(c, text).pass) << c.id << text;
    }
  }
  return passes;
}

TEST(TaskExampleTest, TheToolCallModelsCallsAreJudgedCallByCall) {
  const fs::path dir = FreshDir("orch-task-calls-e2e-");
  const fs::path examples = fs::path(ORCH_SOURCE_DIR) / "examples";
  const std::string cases = FirstLines(examples / "tasks/netcalls-site.jsonl", 8);
  std::ofstream(dir / "cases.jsonl") << cases;
  std::ofstream(dir / "spec.toml") << TaskE2eSpec(
      {"netcalls-site-tiny", (examples / "models/netcalls-site-tiny-f32.gguf").string(),
       "c56fd2aa78de058bc213d01153e9afbf34dbc8a46a5be4ad4f063229a7d676c1"},
      "calls", 64, R"(kv = ["q4_0/f16"])");
  // 8 calls, in the baseline twice and the q4_0 K cache cell once.
  json task;
  RunAndReportTask(dir, "[24/24] succeeded 24", &task);
  if (HasFatalFailure()) return;
  EXPECT_EQ(task["name"], "calls");
  EXPECT_FALSE(task["multiple_choice"].get<bool>());
  const json& baseline = task["baseline"];
  EXPECT_EQ(baseline["cases"], 8);
  EXPECT_EQ(baseline["trials"], 16);

  Result<std::vector<task::TaskCase>> parsed = task::ParseCaseFile(cases, "cases.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const int passes = CheckJudgedRuns(baseline, *parsed);
  EXPECT_EQ(baseline["passes"], passes);
  // The model answers with the tool call its case expects: the first case's text is that
  // call, and it passes (docs/models.md: 115 of the 120 committed calls are right).
  const json* first = CaseOf(baseline, (*parsed)[0].id);
  ASSERT_TRUE(first != nullptr);
  EXPECT_EQ((*first)["runs"][0]["text"],
            R"({"name": "check_port", "arguments": {"service": "dns", "port": 53}})");
  EXPECT_TRUE((*first)["pass"].get<bool>());
  EXPECT_GE(passes, 12) << "of 16 baseline runs";

  ASSERT_EQ(task["cells"].size(), 1u);
  const json& kv = task["cells"][0];
  EXPECT_EQ(kv["label"], "kv=q4_0/f16");
  EXPECT_EQ(kv["cases"], 8);
  CheckJudgedRuns(kv, *parsed);
  EXPECT_GT(kv["kld"]["n"].get<int>(), 0) << "the cell's digests were compared with the baseline's";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
