// The example experiment end to end on the real engine: `orch run
// examples/seed-replication.toml` with the two llama.cpp drivers it finds in the build tree
// (no --driver flag), then `orch report --json --html`. The checks are what the example is
// meant to show: the baseline reruns bit for bit, weight quantization moves the
// distribution more than flash attention, the first divergence is shown as text, the
// engine cell really ran the other llama.cpp build, and the seed changes only the draw.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "store/rocksdb_store.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kTeacherForced[] = "kjv-128";
constexpr char kGenerate[] = "verse-64";

std::string SlurpExampleFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The report of one run of the example, and where its run left its files.
struct Example {
  fs::path dir;
  std::string output;  // what orch run and orch report printed
  json report;         // orch report --json

  std::string data() const { return (dir / "data").string(); }

  const json& Workload(const std::string& name) const {
    for (const json& w : report["workloads"]) {
      if (w["name"] == name) return w;
    }
    ADD_FAILURE() << "no workload " << name;
    static const json kNone = json::object();
    return kNone;
  }

  const json& Cell(const std::string& workload, const std::string& label) const {
    for (const json& c : Workload(workload)["cells"]) {
      if (c["label"] == label) return c;
    }
    ADD_FAILURE() << "no cell " << label << " in " << workload;
    static const json kNone = json::object();
    return kNone;
  }
};

// What the driver of `run_id` said in its hello, from the run's stored summary.
json Hello(store::Store& db, const std::string& run_id) {
  Result<store::RunRecord> run = db.GetRun(run_id);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  if (!run.ok()) return nullptr;
  json summary = json::parse(run->summary, nullptr, /*allow_exceptions=*/false);
  return summary.is_object() ? summary.value("hello", json()) : json();
}

void ExpectEveryJobSucceededWithTheDriversFoundInTheBuildTree(const Example& e) {
  EXPECT_THAT(e.output, HasSubstr("llama.cpp@v0.4.0 runs with " + std::string(ORCH_BINARY_DIR) +
                                  "/drivers/llamacpp/orch-driver-llamacpp-v0.4.0"));
  EXPECT_THAT(e.output, HasSubstr("llama.cpp@b8390 runs with "));
  EXPECT_EQ(e.report["jobs"]["total"], 16);
  EXPECT_EQ(e.report["jobs"]["succeeded"], 16);
  EXPECT_EQ(e.report["partial"], false);
}

void ExpectBaselineRepeatsBitIdenticalInBothWorkloads(const Example& e) {
  for (const char* name : {kTeacherForced, kGenerate}) {
    const json& repeats = e.Workload(name)["baseline"]["repeats"];
    EXPECT_EQ(repeats["available"], 2) << name;
    EXPECT_EQ(repeats["unique_streams"], 1) << name;
    EXPECT_EQ(repeats["bit_identical"], true) << name;
    EXPECT_EQ(repeats["noise"], 0.0) << name;
  }
  // Generate: the same seed on the same coordinate drew the same 64 tokens.
  const json& repeats = e.Workload(kGenerate)["baseline"]["repeats"];
  EXPECT_EQ(repeats["generated_length"], 64);
  EXPECT_EQ(repeats["generated_common_prefix"], 64);
}

void ExpectWeightQuantizationMovesTheDistributionMoreThanFlashAttention(const Example& e) {
  const json& quant = e.Cell(kTeacherForced, "quant=q8_0")["comparison"];
  const json& attention = e.Cell(kTeacherForced, "attention=on")["comparison"];
  ASSERT_TRUE(quant.is_object() && attention.is_object());
  EXPECT_GT(quant["kld"]["mean"].get<double>(), attention["kld"]["mean"].get<double>());
  EXPECT_GT(attention["kld"]["mean"].get<double>(), 0.0);  // not bit-identical either
  EXPECT_EQ(e.report["attribution"]["by_kld"][0]["cell"], "quant=q8_0");
}

void ExpectTheFirstDivergenceShowsBothTokensAsText(const Example& e) {
  int decoded = 0;
  for (const json& cell : e.Workload(kTeacherForced)["cells"]) {
    const json& flip = cell["comparison"]["first_flip"];
    if (flip.is_null()) continue;
    EXPECT_TRUE(flip["reference"]["text"].is_string()) << cell["label"] << flip.dump();
    EXPECT_TRUE(flip["other"]["text"].is_string()) << cell["label"] << flip.dump();
    EXPECT_NE(flip["reference"]["id"], flip["other"]["id"]);
    ++decoded;
  }
  EXPECT_GE(decoded, 2);  // at least attention=on and quant=q8_0 flip a token
  const json& first =
      e.Cell(kGenerate, "quant=q8_0")["comparison"]["generated"]["first_difference"];
  ASSERT_TRUE(first.is_object());
  EXPECT_TRUE(first["reference"]["text"].is_string()) << first.dump();
  EXPECT_TRUE(first["other"]["text"].is_string()) << first.dump();
}

void ExpectTheSeedChangesTheGeneratedTokens(const Example& e) {
  const json& generated = e.Cell(kGenerate, "sampler.seed=43")["comparison"]["generated"];
  ASSERT_TRUE(generated.is_object());
  EXPECT_LT(generated["common_prefix"].get<int>(), generated["reference_tokens"].get<int>());
  const json& first = generated["first_difference"];
  ASSERT_TRUE(first.is_object());
  EXPECT_NE(first["reference"]["id"], first["other"]["id"]);
  EXPECT_TRUE(first["other"]["text"].is_string());
}

void ExpectTheEngineCellRanTheOtherBuildAndMatchesBitForBit(const Example& e) {
  std::string baseline_run = e.Workload(kTeacherForced)["baseline"]["repeats"]["runs"][0];
  std::string engine_run = e.Cell(kTeacherForced, "engine=llama.cpp@b8390")["run"];
  Result<std::unique_ptr<store::Store>> db =
      store::OpenRocksDbStore(store::RocksDbPathInDataDir(e.data()), store::RocksDbOptions{});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  json baseline = Hello(**db, baseline_run);
  json engine = Hello(**db, engine_run);
  EXPECT_EQ(baseline.value("engine", ""), "llama.cpp");
  EXPECT_EQ(baseline.value("version", ""), "v0.4.0") << baseline.dump();
  EXPECT_EQ(engine.value("version", ""), "b8390") << engine.dump();
  EXPECT_NE(baseline.value("commit", ""), engine.value("commit", ""));
  // Measured (docs/drivers.md, "llama.cpp v0.4.0 against b8390"): on this model (head
  // size 64, q4_0 weights) the two releases differ in the last bits of the logits only:
  // KLD ~4e-14, |Δ top-1 logit| <= 1e-6, the same top token at every position.
  const json& engine_cell = e.Cell(kTeacherForced, "engine=llama.cpp@b8390")["comparison"];
  EXPECT_LT(engine_cell["kld"]["max"].get<double>(), 1e-10) << engine_cell.dump();
  EXPECT_LT(engine_cell["max_abs_top1_logit_delta"].get<double>(), 1e-5);
  EXPECT_EQ(engine_cell["top1_agreement"], 1.0);
  EXPECT_EQ(e.Cell(kGenerate, "engine=llama.cpp@b8390")["comparison"]["generated"]["common_prefix"],
            64);
  // The report names the engine difference: the hellos' version field.
  bool names_version = false;
  for (const json& pair : e.Cell(kTeacherForced, "engine=llama.cpp@b8390")["fingerprints"]) {
    if (pair["kind"] != "engine") continue;
    for (const json& d : pair["differences"]) {
      if (d["field"] == "hello.version" && d["reference"] == "\"v0.4.0\"" &&
          d["other"] == "\"b8390\"")
        names_version = true;
    }
  }
  EXPECT_TRUE(names_version) << e.Cell(kTeacherForced, "engine=llama.cpp@b8390")["fingerprints"];
}

void ExpectTheHtmlReportHasOnePlotPerComparedCell(const Example& e) {
  std::string page = SlurpExampleFile(e.dir / "report.html");
  int compared = 0;
  for (const json& w : e.report["workloads"]) {
    for (const json& c : w["cells"]) {
      if (c["status"] != "compared") continue;
      ++compared;
      EXPECT_THAT(page, HasSubstr("data-workload=\"" + w["name"].get<std::string>() +
                                  "\" data-cell=\"" + c["label"].get<std::string>() + "\""));
    }
  }
  EXPECT_EQ(compared, 12);  // 5 teacher-forced cells, 7 generate cells
  std::size_t plots = 0;
  for (auto at = page.find("<svg class=\"plot\""); at != std::string::npos;
       at = page.find("<svg class=\"plot\"", at + 1)) {
    ++plots;
  }
  EXPECT_EQ(plots, static_cast<std::size_t>(compared));
}

// One run of the example feeds every check (each would otherwise rerun it).
TEST(SeedReplicationExampleTest, RunsOnTheRealEnginesAndShowsWhatTheExampleIsFor) {
  Example e;
  e.dir = fs::temp_directory_path() / ("orch-example-" + std::to_string(::getpid()));
  fs::remove_all(e.dir);
  fs::create_directories(e.dir);
  std::string spec = std::string(ORCH_SOURCE_DIR) + "/examples/seed-replication.toml";
  // No --driver: orch finds both llama.cpp drivers in the build tree.
  ProcessResult run =
      RunProcess({OrchBinary(), "run", spec, "--data-dir", e.data(), "--timeout", "120"},
                 std::chrono::seconds(150), e.dir.string());
  e.output = run.out + run.err;
  ASSERT_EQ(run.exit_code, 0) << e.output << SlurpExampleFile(e.dir / "data/local/coordinator.log");
  ProcessResult report = RunProcess({OrchBinary(), "report", "seed-replication", "--json", "--html",
                                     (e.dir / "report.html").string(), "--data-dir", e.data()},
                                    std::chrono::seconds(60), e.dir.string());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  e.report = json::parse(report.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(e.report.is_discarded()) << report.out;

  ExpectEveryJobSucceededWithTheDriversFoundInTheBuildTree(e);
  ExpectBaselineRepeatsBitIdenticalInBothWorkloads(e);
  ExpectWeightQuantizationMovesTheDistributionMoreThanFlashAttention(e);
  ExpectTheFirstDivergenceShowsBothTokensAsText(e);
  ExpectTheSeedChangesTheGeneratedTokens(e);
  ExpectTheEngineCellRanTheOtherBuildAndMatchesBitForBit(e);
  ExpectTheHtmlReportHasOnePlotPerComparedCell(e);
  if (!::testing::Test::HasFailure()) fs::remove_all(e.dir);
}

}  // namespace
}  // namespace orch::testing
