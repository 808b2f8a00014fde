#include "report/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using testing::AttentionRow;
using testing::BaselineRow;
using testing::TargetAt;

Result<Report> ReportOf(store::Store& store, const std::string& experiment,
                        const ReportOptions& options = {}) {
  ORCH_ASSIGN_OR_RETURN(ExperimentInput input, LoadExperiment(store, experiment));
  std::unique_ptr<RunSource> source = MakeStoreRunSource(store);
  return BuildReport(input, *source, options);
}

const CellReport& CellOf(const Report& report, const std::string& workload,
                         const std::string& label) {
  for (const WorkloadReport& w : report.workloads) {
    if (w.workload.name != workload) continue;
    for (const CellReport& c : w.cells) {
      if (c.cell.label == label) return c;
    }
  }
  ADD_FAILURE() << "no cell " << label << " in " << workload;
  static const CellReport kNone;
  return kNone;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildStandardExperiment(*store_);
    Result<Report> report = ReportOf(*store_, "standard");
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  Report report_;
};

TEST_F(ReportTest, ComparesACellWithExactKldAgainstTheFirstBaselineRepeat) {
  const CellReport& c = CellOf(report_, "wiki", "attention=on");
  ASSERT_EQ(c.status, CellStatus::kCompared) << c.reason;
  EXPECT_EQ(c.reference_run, "run-b0");
  EXPECT_EQ(c.reference_repeat, 0);
  const double k10 = testing::ReferenceKld(BaselineRow(10), AttentionRow(10));
  const double k30 = testing::ReferenceKld(BaselineRow(30), AttentionRow(30));
  const digest::StreamSummary& s = c.result.summary;
  EXPECT_EQ(s.kld.count, 40u);
  EXPECT_EQ(s.kld.exact_count, 40u);
  EXPECT_NEAR(s.kld.mean, (k10 + k30) / 40.0, 1e-12);
  EXPECT_NEAR(s.kld.max, std::max(k10, k30), 1e-12);
  EXPECT_EQ(s.kld.median, 0.0);
  // Rank 0.99 * 39 = 38.61 between the two non-zero values.
  EXPECT_NEAR(s.kld.p99, std::min(k10, k30) + 0.61 * std::fabs(k30 - k10), 1e-12);
  EXPECT_DOUBLE_EQ(s.top1_agreement, 38.0 / 40.0);
  EXPECT_EQ(s.first_divergence, 10u);
  EXPECT_EQ(s.common_prefix, 10u);
  EXPECT_FALSE(c.result.bit_identical());
}

TEST_F(ReportTest, ReportsPerplexityOfBothSidesAndTheirRatio) {
  double nll_p = 0.0, nll_q = 0.0;
  for (std::uint64_t i = 0; i < testing::kStandardPositions; ++i) {
    nll_p += testing::ReferenceNll(BaselineRow(i), TargetAt(i));
    nll_q += testing::ReferenceNll(AttentionRow(i), TargetAt(i));
  }
  const digest::StreamSummary& s = CellOf(report_, "wiki", "attention=on").result.summary;
  EXPECT_NEAR(s.ppl_reference, std::exp(nll_p / 40.0), 1e-6);
  EXPECT_NEAR(s.ppl_other, std::exp(nll_q / 40.0), 1e-6);
  EXPECT_NEAR(s.ppl_ratio, std::exp((nll_q - nll_p) / 40.0), 1e-6);
}

TEST_F(ReportTest, FindsFlipPositionsWithBothTokens) {
  const CellReport& c = CellOf(report_, "wiki", "attention=on");
  ASSERT_EQ(c.result.flip_count, 2u);
  EXPECT_EQ(c.result.flips[0].position, 10u);
  EXPECT_EQ(c.result.flips[1].position, 30u);
  ASSERT_TRUE(c.first_flip_reference.has_value());
  EXPECT_EQ(c.first_flip_reference->id, 2);  // baseline argmax at 10
  EXPECT_EQ(c.first_flip_other->id, 3);
}

TEST_F(ReportTest, NearTieFlipLiesInsideTheRepeatNoiseBandAndClearFlipOutside) {
  const CellReport& c = CellOf(report_, "wiki", "attention=on");
  EXPECT_NEAR(c.repeat_noise, 0.5, 1e-6);  // baseline repeat 1 at position 20
  EXPECT_NEAR(c.perturbation, (0.2 + 3.0) / 40.0, 1e-6);
  EXPECT_NEAR(c.noise_band, 0.5, 1e-6);
  ASSERT_EQ(c.result.flips.size(), 2u);
  EXPECT_NEAR(c.result.flips[0].margin, 0.2, 1e-6);
  EXPECT_TRUE(c.result.flips[0].near_tie);
  EXPECT_NEAR(c.result.flips[1].margin, 3.0, 1e-6);
  EXPECT_FALSE(c.result.flips[1].near_tie);
  EXPECT_EQ(c.near_tie_flips, 1u);
}

TEST_F(ReportTest, GroupsFlipsIntoClustersOfNearbyPositions) {
  const CellReport& c = CellOf(report_, "wiki", "quant=q8_0");
  EXPECT_EQ(c.result.flip_count, 6u);
  ASSERT_EQ(c.result.cluster_count, 3u);
  ASSERT_EQ(c.result.clusters.size(), 3u);
  EXPECT_EQ(c.result.clusters[0].first, 3u);
  EXPECT_EQ(c.result.clusters[0].last, 9u);
  EXPECT_EQ(c.result.clusters[0].flips, 3u);
  EXPECT_EQ(c.result.clusters[1].first, 25u);
  EXPECT_EQ(c.result.clusters[1].flips, 1u);
  EXPECT_EQ(c.result.clusters[2].first, 34u);
  EXPECT_EQ(c.result.clusters[2].last, 36u);
}

TEST_F(ReportTest, BaselineRepeatsThatDifferNameTheFirstDifferingPosition) {
  const Repeatability& r = report_.workloads[0].baseline.repeats;
  EXPECT_EQ(r.available, 2);
  EXPECT_EQ(r.unique_streams, 2);
  EXPECT_FALSE(r.bit_identical());
  EXPECT_EQ(r.first_difference, 20u);
  EXPECT_EQ(r.run_ids, (std::vector<std::string>{"run-b0", "run-b1"}));
}

TEST_F(ReportTest, CellWhoseRunsAllFailedIsShownWithTheReason) {
  const CellReport& c = CellOf(report_, "wiki", "kv=q8_0");
  EXPECT_EQ(c.status, CellStatus::kFailed);
  EXPECT_NE(c.reason.find(testing::kStandardFailure), std::string::npos) << c.reason;
  EXPECT_EQ(report_.jobs_failed, 1);
  EXPECT_FALSE(report_.partial);
}

TEST_F(ReportTest, GenerateWorkloadComparesGeneratedTokensAndSeedReproduction) {
  const WorkloadReport& gen = report_.workloads[1];
  EXPECT_TRUE(gen.baseline.repeats.bit_identical());  // the same seed reproduced
  EXPECT_EQ(gen.baseline.repeats.generated_common_prefix, 6u);
  const CellReport& c = CellOf(report_, "gen", "sampler.seed=43");
  ASSERT_EQ(c.status, CellStatus::kCompared) << c.reason;
  EXPECT_EQ(c.result.generated_common_prefix, 2u);
  ASSERT_TRUE(c.result.first_token_difference.has_value());
  EXPECT_EQ(c.result.first_token_difference->index, 2u);
  EXPECT_EQ(c.generated_reference->id, 3);
  EXPECT_EQ(c.generated_other->id, 7);
  EXPECT_EQ(c.result.summary.compared, 3u);  // distributions only while histories agree
}

TEST_F(ReportTest, RanksAxesByKldAndByTopOneDisagreement) {
  ASSERT_EQ(report_.by_kld.size(), 2u);
  EXPECT_EQ(report_.by_kld[0].axis, "quant");
  EXPECT_EQ(report_.by_kld[1].axis, "attention");
  ASSERT_EQ(report_.by_top1.size(), 2u);
  EXPECT_EQ(report_.by_top1[0].axis, "quant");
  EXPECT_DOUBLE_EQ(report_.by_top1[0].top1_disagreement, 6.0 / 40.0);
}

TEST_F(ReportTest, NamesTheFingerprintFieldsThatDiffer) {
  const CellReport& att = CellOf(report_, "wiki", "attention=on");
  ASSERT_EQ(att.fingerprints.size(), 2u);
  EXPECT_EQ(att.fingerprints[0].kind, "host");
  ASSERT_EQ(att.fingerprints[0].differences.size(), 1u);
  EXPECT_EQ(att.fingerprints[0].differences[0].field, "host.cpu.model_name");
  EXPECT_TRUE(CellOf(report_, "wiki", "quant=q8_0").fingerprints[0].same);
}

class FixedDecoder final : public TokenDecoder {
 public:
  std::optional<std::string> Decode(std::int32_t token) const override {
    if (token == 2) return "math";
    if (token == 3) return "arithmetic";
    return std::nullopt;
  }
};

TEST(ReportDecoderTest, DecodesTokensAtTheFirstFlipWhenAVocabularyIsGiven) {
  auto store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  FixedDecoder decoder;
  Result<Report> report = ReportOf(*store, "standard", ReportOptions{&decoder});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const CellReport& c = CellOf(*report, "wiki", "attention=on");
  EXPECT_EQ(c.first_flip_reference->text, "math");
  EXPECT_EQ(c.first_flip_other->text, "arithmetic");
}

TEST(ReportLoadTest, MissingExperimentIsNotFoundWithItsName) {
  auto store = store::MakeMemoryStore();
  Result<ExperimentInput> input = LoadExperiment(*store, "nope");
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.status().code(), StatusCode::kNotFound);
  EXPECT_NE(input.status().message().find("\"nope\" not found"), std::string::npos);
}

TEST(ReportPartialTest, RunningExperimentGivesAPartialReportThatSaysSo) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("live");
  plan.Workload("wiki", "teacher_forced").Cell("baseline").Cell("attention=on");
  const std::string b = plan.Job("baseline", "wiki", 0);
  const std::string a = plan.Job("attention=on", "wiki", 0);
  plan.Submit(*store);
  std::vector<digest::PositionRecord> records;
  for (std::uint64_t i = 0; i < 5; ++i) {
    records.push_back(testing::MakeRecord(i, BaselineRow(i), TargetAt(i), false));
  }
  testing::AddSucceededRun(*store, b, "run-b", records);
  testing::AddRunningRun(*store, a, "run-a", records);
  Result<Report> report = ReportOf(*store, "live");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->partial);
  EXPECT_EQ(report->jobs_in_progress, 1);
  EXPECT_EQ(report->jobs_succeeded, 1);
  const CellReport& c = CellOf(*report, "wiki", "attention=on");
  EXPECT_EQ(c.status, CellStatus::kInProgress);
  EXPECT_EQ(report->workloads[0].baseline.status, CellStatus::kCompared);
  // In the terminal the warning has a line of its own, so no width splits its words.
  const std::string text = RenderText(*report, {70});
  EXPECT_EQ(text.find("experiment live: 2 jobs, 1 succeeded, 0 failed, 1 not finished\n"
                      "PARTIAL REPORT: the experiment is still running\n"),
            0u)
      << text;
}

TEST(ReportPartialTest, CellWithoutBaselineSaysWhy) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("nobase");
  plan.Workload("wiki", "teacher_forced").Cell("baseline").Cell("attention=on");
  const std::string b = plan.Job("baseline", "wiki", 0);
  const std::string a = plan.Job("attention=on", "wiki", 0);
  plan.Submit(*store);
  testing::AddFailedRun(*store, b, "run-b", "model file missing");
  testing::AddSucceededRun(*store, a, "run-a",
                           {testing::MakeRecord(0, BaselineRow(0), TargetAt(0), false)});
  Result<Report> report = ReportOf(*store, "nobase");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const CellReport& c = CellOf(*report, "wiki", "attention=on");
  EXPECT_EQ(c.status, CellStatus::kNoBaseline);
  EXPECT_NE(c.reason.find("model file missing"), std::string::npos) << c.reason;
}

}  // namespace
}  // namespace orch::report
