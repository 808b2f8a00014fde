// `orch report --by-host` as a pure core: the contributed experiment's runs on other hosts
// or fingerprint classes than their job's reference run, grouped by the pair of classes
// they differ by, each fingerprint difference given once per pair of hosts.
#include "report/host_compare.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fingerprint/fingerprint_json.h"
#include "report/render.h"
#include "report/tables.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

std::size_t CountOf(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<std::string> RunIds(const HostPair& pair) {
  std::vector<std::string> out;
  for (const HostRun& r : pair.runs) out.push_back(r.run.run_id);
  return out;
}

class HostCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildContributedExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "contributed");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<HostReport> report = BuildHostReport(*input, *source);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  HostReport report_;
};

// Classes: A (fp-a, and its twin fp-a2), B (fp-b), C (fp-c). References: the lab's run on
// fp-a for baseline and quant=q8_0, alice's on fp-b for attention=on.
TEST_F(HostCompareTest, RunsThatDifferTheSameWayAreOneGroupWithOneFingerprintDifference) {
  EXPECT_EQ(report_.jobs_total, 3);
  EXPECT_EQ(report_.jobs_listed, 3);
  ASSERT_EQ(report_.pairs.size(), 4u);
  const HostPair& ab = report_.pairs[0];
  EXPECT_EQ(ab.reference_hosts, std::vector<std::string>{"fp-a"});
  EXPECT_EQ(ab.other_hosts, std::vector<std::string>{"fp-b"});
  EXPECT_NE(ab.reference_class, ab.other_class);
  EXPECT_EQ(RunIds(ab), (std::vector<std::string>{"run-base-alice", "run-q-bob"}));
  EXPECT_EQ(ab.bit_identical(), 1);
  ASSERT_EQ(ab.differences.size(), 1u);
  const FingerprintComparison& host = ab.differences[0].fingerprints.at(0);
  EXPECT_EQ(host.kind, "host");
  ASSERT_EQ(host.differences.size(), 1u);
  EXPECT_EQ(host.differences[0].field, "host.cpu.model_name");
  EXPECT_EQ(host.differences[0].group, fingerprint::DiffGroup::kHardware);
  EXPECT_EQ(RunIds(report_.pairs[1]), std::vector<std::string>{"run-base-bob"});
  EXPECT_EQ(RunIds(report_.pairs[2]), std::vector<std::string>{"run-att-2"});
  EXPECT_EQ(report_.pairs[2].reference_hosts, std::vector<std::string>{"fp-b"});
}

TEST_F(HostCompareTest, EachRunHasItsStreamComparisonAgainstItsJobsReference) {
  const HostRun& bob = report_.pairs[0].runs[1];
  EXPECT_EQ(bob.job.cell, "quant=q8_0");
  EXPECT_EQ(bob.reference.run_id, "run-q-lab");
  EXPECT_EQ(bob.run.contributor, "bob");
  EXPECT_FALSE(bob.same_stream);
  EXPECT_EQ(bob.first_difference, 25u);
  EXPECT_GT(bob.kld_mean, 0.0);
  EXPECT_EQ(bob.kld_method, "exact");
  EXPECT_DOUBLE_EQ(bob.top1_agreement, 1.0);
  const HostRun& alice = report_.pairs[0].runs[0];
  EXPECT_TRUE(alice.same_stream);
  EXPECT_EQ(alice.kld_mean, 0.0);
}

// The KLD mean and top-1 agreement carry n and a 95% interval, as the report's figures do.
TEST_F(HostCompareTest, TheKldMeanAndTopOneAgreementCarryNAndAnInterval) {
  const HostRun& bob = report_.pairs[0].runs[1];
  EXPECT_EQ(bob.kld_n, testing::kContributedPositions);
  ASSERT_TRUE(bob.kld_ci95.available()) << bob.kld_ci95.method;
  EXPECT_LE(bob.kld_ci95.lo, bob.kld_mean);
  EXPECT_GE(bob.kld_ci95.hi, bob.kld_mean);
  EXPECT_EQ(bob.top1_estimate.n, testing::kContributedPositions);
  EXPECT_EQ(bob.top1_estimate.ci95.method, "Wilson");
  const std::string text = RenderHostText(report_, testing::kUnwrapped);
  EXPECT_NE(text.find("KLD mean [95% CI] n (method)"), std::string::npos) << text;
  EXPECT_NE(text.find("orch bisect REFERENCE_RUN RUN compares two of these runs and says what "
                      "their hosts add"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(FormatEstimate(bob.kld_mean, bob.kld_n, bob.kld_ci95, FormatKld) + " (exact)"),
      std::string::npos)
      << text;
  nlohmann::json json = nlohmann::json::parse(RenderHostJson(report_));
  const nlohmann::json& row = json["pairs"][0]["runs"][1];
  EXPECT_EQ(row["kld_n"], testing::kContributedPositions);
  EXPECT_TRUE(row["kld_ci95"].is_array());
  EXPECT_EQ(row["top1_agreement_estimate"]["n"], testing::kContributedPositions);
}

TEST_F(HostCompareTest, ASameClassTwinIsAGroupOfItsOwn) {
  const HostPair& twin = report_.pairs[3];
  EXPECT_EQ(twin.reference_class, twin.other_class);
  EXPECT_EQ(twin.other_hosts, std::vector<std::string>{"fp-a2"});
  ASSERT_EQ(twin.runs.size(), 1u);
  EXPECT_EQ(twin.runs[0].first_difference, 20u);
  ASSERT_EQ(twin.differences.at(0).fingerprints.at(0).differences.size(), 1u);
  EXPECT_EQ(twin.differences[0].fingerprints[0].differences[0].field, "host.memory_bytes");
}

TEST_F(HostCompareTest, TheTextGivesEachDifferenceOnceAndTheJsonGroupsRuns) {
  const std::string text = RenderHostText(report_, testing::kUnwrapped);
  EXPECT_NE(text.find("3 of 3 jobs ran on more than one host or fingerprint class; their runs "
                      "differ from the reference in 4 ways"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(host fp-a) vs class "), std::string::npos) << text;
  EXPECT_NE(text.find("(host fp-b): 2 runs, 1 bit-identical =="), std::string::npos) << text;
  // fp-a against fp-b ran two jobs; their difference is printed once (before: per job).
  EXPECT_EQ(CountOf(text, "Intel N150  AMD EPYC 9654"), 1u) << text;
  EXPECT_EQ(CountOf(text, "host.cpu.model_name"), 3u) << text;

  nlohmann::json json = nlohmann::json::parse(RenderHostJson(report_));
  EXPECT_EQ(json["schema"], "orch.report-hosts/2");
  EXPECT_EQ(json["jobs_listed"], 3);
  const nlohmann::json& ab = json["pairs"][0];
  EXPECT_EQ(ab["reference"]["hosts"], nlohmann::json{"fp-a"});
  EXPECT_EQ(ab["bit_identical"], 1);
  EXPECT_EQ(ab["differences"].size(), 1u);
  EXPECT_EQ(ab["differences"][0]["fingerprints"][0]["differences"][0]["group"], "hardware");
  EXPECT_EQ(ab["runs"][1]["run"]["run"], "run-q-bob");
  EXPECT_EQ(ab["runs"][1]["reference"]["run"], "run-q-lab");
  EXPECT_EQ(ab["runs"][1]["same_stream"], false);
  EXPECT_EQ(ab["runs"][1]["first_difference"], 25);
}

std::string HostSummary(const std::string& version) {
  return nlohmann::json{{"driver", "llamacpp-" + version},
                        {"hello", {{"engine", "llama.cpp"}, {"version", version}}}}
      .dump();
}

// One rig that ran the job with two engine builds: one host, two fingerprint classes.
TEST(HostCompareStandaloneTest, ARigWithTheSameHostButAnotherClassIsShown) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("rig");
  plan.Workload("wiki", "teacher_forced", 4).Cell("baseline");
  const std::string job = plan.Job("baseline", "wiki", 0);
  plan.Submit(*store);
  fingerprint::Fingerprint fp;
  fp.host.cpu.model_name = fingerprint::Probed<std::string>::Known("Intel N150");
  ASSERT_TRUE(store->PutFingerprint("fp-a", fingerprint::ToCanonicalJson(fp)).ok());
  std::vector<digest::PositionRecord> a, b;
  for (std::uint64_t i = 0; i < 4; ++i) {
    a.push_back(testing::MakeRecord(i, testing::TwoPeakRow(1, 2, 1.0), 1, true));
    b.push_back(testing::MakeRecord(i, testing::TwoPeakRow(1, 2, i == 2 ? 1.5 : 1.0), 1, true));
  }
  testing::AddSucceededRunWithSummary(*store, job, "run-old", a, HostSummary("b8390"), "fp-a");
  testing::AddSucceededRunWithSummary(*store, job, "run-new", b, HostSummary("v0.4.0"), "fp-a");
  Result<ExperimentInput> input = LoadExperiment(*store, "rig");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<HostReport> report = BuildHostReport(*input, *source);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->jobs_listed, 1);
  ASSERT_EQ(report->pairs.size(), 1u);
  const HostPair& pair = report->pairs[0];
  EXPECT_EQ(pair.reference_hosts, pair.other_hosts);
  EXPECT_NE(pair.reference_class, pair.other_class);
  ASSERT_EQ(pair.runs.size(), 1u);
  EXPECT_EQ(pair.runs[0].first_difference, 2u);
  const std::string text = RenderHostText(*report);
  EXPECT_NE(text.find("hello.version"), std::string::npos) << text;
}

TEST(HostCompareStandaloneTest, ALabOnlyExperimentOnOneHostListsNoJob) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "standard");
  ASSERT_TRUE(input.ok());
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<HostReport> report = BuildHostReport(*input, *source);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->jobs_total, 8);
  EXPECT_TRUE(report->pairs.empty());
  EXPECT_EQ(RenderHostText(*report),
            "experiment standard: 0 of 8 jobs ran on more than one host or fingerprint class\n");
}

}  // namespace
}  // namespace orch::report
