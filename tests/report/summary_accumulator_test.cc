#include "report/summary_accumulator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace orch::report {
namespace {

digest::PositionComparison Exact(std::uint64_t position, double kld, bool same_top1,
                                 double nll_reference, double nll_other) {
  digest::PositionComparison c;
  c.position = position;
  c.same_top1 = same_top1;
  c.scored = true;
  c.kld_method = digest::KldMethod::kExact;
  c.kld = kld;
  c.delta_p = 0.0;
  c.nll_reference = nll_reference;
  c.nll_other = nll_other;
  return c;
}

// Every mean of a pair carries its n and an interval around it, the proportions by
// Wilson, the means by the block bootstrap; the PPL ratio's interval is on the ratio.
TEST(SummaryAccumulatorIntervalsTest, EveryMeanCarriesNAndAnIntervalAroundIt) {
  SummaryAccumulator a;
  for (std::uint64_t i = 0; i < 200; ++i) {
    a.Add(Exact(i, 0.01 * static_cast<double>((i * 37) % 11), i % 10 != 0, 1.0,
                1.0 + 0.01 * static_cast<double>((i * 53) % 13)));
  }
  const SummaryAccumulator::Result r = a.Finish(200, 200);
  EXPECT_EQ(r.exact.count, 200u);
  ASSERT_TRUE(r.exact.ci95.available());
  EXPECT_LT(r.exact.ci95.lo, r.exact.mean);
  EXPECT_GT(r.exact.ci95.hi, r.exact.mean);
  EXPECT_EQ(r.exact.ci95.method, "block bootstrap (block 6, 1000 resamples)");
  EXPECT_FALSE(r.bound.ci95.available());
  EXPECT_EQ(r.bound.ci95.method, "no interval: n=0");

  const PairEstimates& e = r.estimates;
  EXPECT_EQ(e.top1_agreement.n, 200u);
  EXPECT_DOUBLE_EQ(e.top1_agreement.mean, r.summary.top1_agreement);
  EXPECT_EQ(e.top1_agreement.ci95.method, "Wilson");
  EXPECT_DOUBLE_EQ(e.flip_rate.mean, 20.0 / 200.0);
  EXPECT_NEAR(e.flip_rate.ci95.lo, 1.0 - e.top1_agreement.ci95.hi, 1e-12);
  EXPECT_EQ(e.ppl_ratio.n, 200u);
  EXPECT_DOUBLE_EQ(e.ppl_ratio.mean, r.summary.ppl_ratio);
  EXPECT_LT(e.ppl_ratio.ci95.lo, e.ppl_ratio.mean);
  EXPECT_GT(e.ppl_ratio.ci95.hi, e.ppl_ratio.mean);
  EXPECT_GT(e.ppl_ratio.ci95.lo, 1.0);  // every position's NLL grew or stayed
}

// Past kMaxBlocks positions the block sums merge: the mean stays exact and the method
// names the longer block.
TEST(SummaryAccumulatorIntervalsTest, LongStreamsKeepTheMeanExactInCappedMemory) {
  SummaryAccumulator a;
  double sum = 0.0;
  constexpr std::uint64_t kPositions = 10000;
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    const double kld = 1e-6 * static_cast<double>(i % 7);
    sum += kld;
    a.Add(Exact(i, kld, true, 1.0, 1.0));
  }
  const SummaryAccumulator::Result r = a.Finish(kPositions, kPositions);
  EXPECT_NEAR(r.exact.mean, sum / kPositions, 1e-18);
  // 10000 values in at most 4096 blocks: blocks of 4; ceil(10000^(1/3)) = 22 -> 24.
  EXPECT_EQ(r.exact.ci95.method, "block bootstrap (block 24, 1000 resamples)");
  EXPECT_TRUE(r.exact.ci95.available());
}

}  // namespace
}  // namespace orch::report
