#include "report/pair_compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "digest/stream_compare.h"
#include "report/paired_scan.h"
#include "store/memory_store.h"
#include "tests/digest/synthetic_rows.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

constexpr std::size_t kVocab = 64;

void ExpectSame(double a, double b) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b));
  } else {
    EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::fabs(a)));
  }
}

// Two runs longer than several scan chunks, with full rows every 7th position: the
// streaming result must equal digest::CompareStreams over the whole streams.
TEST(PairCompareTest, StreamingSummaryEqualsTheDigestLibraryAcrossChunkBoundaries) {
  const std::size_t n = 3 * kScanChunk + 17;
  digest::testing::RowGenerator gen(7);
  std::vector<digest::PositionRecord> a, b;
  std::vector<digest::RowDigest> da, db;
  std::vector<std::vector<float>> rows_a, rows_b;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<float> p = gen.Row(kVocab, 1.0, 4.0);
    std::vector<float> q = p;
    if (i >= 100) {
      for (float& x : q) x += static_cast<float>(0.3 * gen.Normal());
    }
    const std::int32_t target = static_cast<std::int32_t>(i % kVocab);
    const bool full = i % 7 == 0;
    a.push_back(testing::MakeRecord(i, p, target, full));
    b.push_back(testing::MakeRecord(i, q, target, full));
    da.push_back(a.back().digest);
    db.push_back(b.back().digest);
    rows_a.push_back(p);
    rows_b.push_back(q);
  }
  std::vector<digest::FullRow> fa, fb;
  for (std::size_t i = 0; i < n; i += 7) {
    fa.push_back({i, rows_a[i]});
    fb.push_back({i, rows_b[i]});
  }
  Result<digest::StreamComparison> expected = digest::CompareStreams({da, fa}, {db, fb});
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();

  testing::ExperimentBuilder plan("e");
  plan.Workload("w", "teacher_forced").Cell("baseline").Cell("x=1");
  const std::string j0 = plan.Job("baseline", "w", 0), j1 = plan.Job("x=1", "w", 0);
  auto store = store::MakeMemoryStore();
  plan.Submit(*store);
  testing::AddSucceededRun(*store, j0, "a", a);
  testing::AddSucceededRun(*store, j1, "b", b);
  auto source = MakeStoreRunSource(*store);
  Result<PairResult> got = ComparePair(*source, "a", "b", {});
  ASSERT_TRUE(got.ok()) << got.status().ToString();

  const digest::StreamSummary& e = expected->summary;
  const digest::StreamSummary& s = got->summary;
  EXPECT_EQ(s.compared, n);
  EXPECT_EQ(s.first_divergence, e.first_divergence);
  EXPECT_EQ(s.common_prefix, 100u);
  EXPECT_EQ(s.identical_rows, e.identical_rows);
  EXPECT_EQ(s.scored, e.scored);
  EXPECT_EQ(s.kld.count, e.kld.count);
  EXPECT_EQ(s.kld.exact_count, e.kld.exact_count);
  ExpectSame(s.top1_agreement, e.top1_agreement);
  ExpectSame(s.kld.mean, e.kld.mean);
  ExpectSame(s.kld.median, e.kld.median);
  ExpectSame(s.kld.p99, e.kld.p99);
  ExpectSame(s.kld.max, e.kld.max);
  ExpectSame(s.rms_delta_p, e.rms_delta_p);
  ExpectSame(s.ppl_ratio, e.ppl_ratio);
  ExpectSame(s.mean_abs_top1_logit_delta, e.mean_abs_top1_logit_delta);
  std::uint64_t flips = 0;
  for (const digest::PositionComparison& c : expected->positions) flips += c.same_top1 ? 0 : 1;
  EXPECT_EQ(got->flip_count, flips);
  EXPECT_LE(got->plot.max_kld.size(), kPlotBins);

  // The exact positions (every 7th) and the top-k bound positions, summarized apart.
  double exact_sum = 0.0, bound_sum = 0.0, exact_max = 0.0;
  std::uint64_t exact_n = 0, bound_n = 0;
  for (const digest::PositionComparison& c : expected->positions) {
    if (c.kld_method == digest::KldMethod::kExact) {
      exact_sum += c.kld;
      exact_max = std::max(exact_max, c.kld);
      ++exact_n;
    } else if (c.kld_method == digest::KldMethod::kTopK) {
      bound_sum += c.kld;
      ++bound_n;
    }
  }
  EXPECT_EQ(KldMethodName(s.kld), "mixed");
  EXPECT_EQ(got->kld_exact.count, exact_n);
  EXPECT_EQ(got->kld_exact.count, (n + 6) / 7);
  EXPECT_EQ(got->kld_bound.count, bound_n);
  ExpectSame(got->kld_exact.mean, exact_sum / static_cast<double>(exact_n));
  ExpectSame(got->kld_exact.max, exact_max);
  ExpectSame(got->kld_bound.mean, bound_sum / static_cast<double>(bound_n));
}

// Where the full row was kept the plot says so: that bin's value is in the exact series,
// the others in the bound series, never one series that spikes at the capture points.
TEST(PairCompareTest, PlotKeepsExactAndBoundPositionsInSeparateSeriesWithTheMargin) {
  std::vector<digest::PositionRecord> a, b;
  for (std::uint64_t i = 0; i < 8; ++i) {
    const bool full = i % 4 == 0;
    a.push_back(testing::MakeRecord(i, testing::TwoPeakRow(0, 1, 1.0 + 0.1 * i), 0, full));
    b.push_back(testing::MakeRecord(i, testing::TwoPeakRow(0, 1, 1.5 + 0.1 * i), 0, full));
  }
  testing::ExperimentBuilder plan("e");
  plan.Workload("w", "teacher_forced").Cell("baseline").Cell("x=1");
  const std::string j0 = plan.Job("baseline", "w", 0), j1 = plan.Job("x=1", "w", 0);
  auto store = store::MakeMemoryStore();
  plan.Submit(*store);
  testing::AddSucceededRun(*store, j0, "a", a);
  testing::AddSucceededRun(*store, j1, "b", b);
  auto source = MakeStoreRunSource(*store);
  Result<PairResult> got = ComparePair(*source, "a", "b", {});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const PositionPlot& plot = got->plot;
  ASSERT_EQ(plot.max_kld.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const bool exact = i % 4 == 0;
    EXPECT_EQ(std::isnan(plot.max_exact_kld[i]), !exact) << i;
    EXPECT_EQ(std::isnan(plot.max_bound_kld[i]), exact) << i;
    EXPECT_EQ(plot.max_kld[i], exact ? plot.max_exact_kld[i] : plot.max_bound_kld[i]) << i;
    EXPECT_NEAR(plot.min_margin[i], 1.0 + 0.1 * static_cast<double>(i), 1e-6) << i;
  }
  EXPECT_EQ(got->kld_exact.count, 2u);
  EXPECT_EQ(got->kld_bound.count, 6u);
}

TEST(PairCompareTest, AFlipKeepsTheReferenceInputTokensBeforeIt) {
  std::vector<digest::PositionRecord> a, b;
  for (std::uint64_t i = 0; i < 6; ++i) {
    a.push_back(testing::MakeRecord(i, testing::TwoPeakRow(0, 1, 1.0), 0, false));
    const bool flip = i == 5 || i == 1;
    b.push_back(testing::MakeRecord(
        i, flip ? testing::TwoPeakRow(1, 0, 1.0) : testing::TwoPeakRow(0, 1, 1.0), 0, false));
  }
  testing::ExperimentBuilder plan("e");
  plan.Workload("w", "teacher_forced").Cell("baseline").Cell("x=1");
  const std::string j0 = plan.Job("baseline", "w", 0), j1 = plan.Job("x=1", "w", 0);
  auto store = store::MakeMemoryStore();
  plan.Submit(*store);
  testing::AddSucceededRun(*store, j0, "a", a);
  testing::AddSucceededRun(*store, j1, "b", b);
  auto source = MakeStoreRunSource(*store);
  Result<PairResult> got = ComparePair(*source, "a", "b", {});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->flips.size(), 2u);
  // MakeRecord's input token at position i is i % kVocab.
  EXPECT_EQ(got->flips[0].context, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(got->flips[1].context, (std::vector<std::int32_t>{2, 3, 4, 5}));
}

TEST(PairCompareTest, PlotKeepsAtMostTheBinLimitByWideningBins) {
  std::vector<digest::PositionRecord> a;
  const std::size_t n = 3 * kPlotBins + 5;
  for (std::size_t i = 0; i < n; ++i) {
    a.push_back(testing::MakeRecord(i, testing::TwoPeakRow(0, 1, 1.0), 0, false));
  }
  testing::ExperimentBuilder plan("e");
  plan.Workload("w", "teacher_forced").Cell("baseline");
  const std::string j0 = plan.Job("baseline", "w", 0), j1 = plan.Job("baseline", "w", 1);
  auto store = store::MakeMemoryStore();
  plan.Submit(*store);
  testing::AddSucceededRun(*store, j0, "a", a);
  testing::AddSucceededRun(*store, j1, "b", a);
  auto source = MakeStoreRunSource(*store);
  Result<PairResult> got = ComparePair(*source, "a", "b", {});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->bit_identical());
  EXPECT_EQ(got->plot.bin_width, 4u);
  EXPECT_LE(got->plot.max_kld.size(), kPlotBins);
  EXPECT_EQ(got->plot.max_kld[0], 0.0);
}

TEST(PairCompareTest, RunsOfDifferentLengthAreNotBitIdentical) {
  std::vector<digest::PositionRecord> a;
  for (std::size_t i = 0; i < 4; ++i) {
    a.push_back(testing::MakeRecord(i, testing::TwoPeakRow(0, 1, 1.0), 0, false));
  }
  std::vector<digest::PositionRecord> b(a.begin(), a.begin() + 3);
  testing::ExperimentBuilder plan("e");
  plan.Workload("w", "teacher_forced").Cell("baseline");
  const std::string j0 = plan.Job("baseline", "w", 0), j1 = plan.Job("baseline", "w", 1);
  auto store = store::MakeMemoryStore();
  plan.Submit(*store);
  testing::AddSucceededRun(*store, j0, "a", a);
  testing::AddSucceededRun(*store, j1, "b", b);
  auto source = MakeStoreRunSource(*store);
  Result<PairResult> got = ComparePair(*source, "a", "b", {});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->bit_identical());
  EXPECT_EQ(got->summary.reference_length, 4u);
  EXPECT_EQ(got->summary.other_length, 3u);
  EXPECT_EQ(got->summary.compared, 3u);
}

}  // namespace
}  // namespace orch::report
