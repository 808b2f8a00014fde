#include "report/provenance.h"

#include <gtest/gtest.h>

#include "fingerprint/fingerprint_json.h"
#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

std::string Summary(const std::string& version, const std::string& commit, const std::string& type,
                    const std::string& sha) {
  return R"({"hello": {"engine": "llama.cpp", "version": ")" + version + R"(", "commit": ")" +
         commit + R"(", "hardware": "cpu: Example CPU"}, "done": {"model": {"sha256": ")" + sha +
         R"(", "type": ")" + type + R"("}}})";
}

TEST(ProvenanceTest, NamesTheModelTheBaselineTheHostsAndTheEngineBuildsOfTheRuns) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("p");
  plan.Workload("wiki", "teacher_forced").Model("tiny", "abc123");
  plan.Baseline("engine", "llama.cpp@v0.4.0").Baseline("quant", "q4_0");
  plan.Cell("baseline").Cell("engine=llama.cpp@b8390");
  const std::string b = plan.Job("baseline", "wiki", 0);
  const std::string e = plan.Job("engine=llama.cpp@b8390", "wiki", 0);
  plan.Submit(*store);
  fingerprint::Fingerprint fp;
  fp.host.cpu.model_name = fingerprint::Probed<std::string>::Known("Intel N150");
  ASSERT_TRUE(store->PutFingerprint("fp-a", fingerprint::ToCanonicalJson(fp)).ok());
  const std::vector<digest::PositionRecord> records = {
      testing::MakeRecord(0, testing::TwoPeakRow(1, 2, 1.0), 1, true)};
  testing::AddSucceededRunWithSummary(*store, b, "run-b", records,
                                      Summary("v0.4.0", "1111", "Q4_0", "f00d"), "fp-a");
  testing::AddSucceededRunWithSummary(*store, e, "run-e", records,
                                      Summary("b8390", "2222", "Q4_0", "f00d"));
  Result<ExperimentInput> input = LoadExperiment(*store, "p");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  Result<PlanView> view = ParsePlanView(input->plan.json);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);

  const Provenance p = CollectProvenance(*view, input->runs, *source);
  EXPECT_EQ(p.model_name, "tiny");
  EXPECT_EQ(p.model_id, "sha256:abc123");
  ASSERT_EQ(p.model_files.size(), 1u);
  EXPECT_EQ(p.model_files[0].value, "Q4_0 sha256:f00d");
  EXPECT_EQ(p.model_files[0].cells.size(), 2u);
  ASSERT_EQ(p.baseline.size(), 2u);
  EXPECT_EQ(p.baseline[0], (std::pair<std::string, std::string>{"engine", "llama.cpp@v0.4.0"}));
  ASSERT_EQ(p.hosts.size(), 2u);  // one from the fingerprint, one from the hello
  EXPECT_EQ(p.hosts[0].value, "agent-1: Intel N150 (fingerprint fp-a)");
  EXPECT_EQ(p.hosts[1].value, "agent-1: cpu: Example CPU");
  ASSERT_EQ(p.engines.size(), 2u);
  EXPECT_EQ(p.engines[0].value, "llama.cpp v0.4.0 (commit 1111)");
  EXPECT_EQ(p.engines[0].cells, std::vector<std::string>{"baseline"});
  EXPECT_EQ(p.engines[1].value, "llama.cpp b8390 (commit 2222)");
}

}  // namespace
}  // namespace orch::report
