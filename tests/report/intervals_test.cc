#include "report/intervals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace orch::report {
namespace {

// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
// method 3 (score interval without continuity correction), to four places.
TEST(WilsonIntervalTest, MatchesNewcombesTextbookExamples) {
  struct Case {
    std::uint64_t successes, n;
    double lo, hi;
  };
  for (const Case& c : {Case{81, 263, 0.2553, 0.3662}, Case{15, 148, 0.0624, 0.1605},
                        Case{0, 20, 0.0, 0.1611}, Case{1, 29, 0.0061, 0.1718}}) {
    const Interval i = WilsonInterval(c.successes, c.n);
    EXPECT_NEAR(i.lo, c.lo, 5e-5) << c.successes << "/" << c.n;
    EXPECT_NEAR(i.hi, c.hi, 5e-5) << c.successes << "/" << c.n;
    EXPECT_EQ(i.method, "Wilson");
  }
}

TEST(WilsonIntervalTest, NoPositionsGiveNoIntervalAndSaySo) {
  const Estimate e = WilsonEstimate(0, 0);
  EXPECT_TRUE(std::isnan(e.mean));
  EXPECT_FALSE(e.ci95.available());
  EXPECT_EQ(e.ci95.method, "no interval: n=0");
}

TEST(WilsonIntervalTest, AllSuccessesReachOneAndStayWithinZeroAndOne) {
  const Interval i = WilsonInterval(40, 40);
  EXPECT_DOUBLE_EQ(i.hi, 1.0);
  EXPECT_GT(i.lo, 0.9);
  EXPECT_LT(i.lo, 1.0);
}

TEST(BlockLengthRuleTest, IsTheCeilingOfTheCubeRoot) {
  EXPECT_EQ(BlockLengthRule(0), 1u);
  EXPECT_EQ(BlockLengthRule(1), 1u);
  EXPECT_EQ(BlockLengthRule(8), 2u);
  EXPECT_EQ(BlockLengthRule(9), 3u);
  EXPECT_EQ(BlockLengthRule(27), 3u);
  EXPECT_EQ(BlockLengthRule(1000), 10u);
  EXPECT_EQ(BlockLengthRule(1001), 11u);
}

TEST(BlockBootstrapTest, NoValueOrOneValueGivesNoIntervalAndSaysSo) {
  BlockSums none;
  Estimate e = none.Bootstrap();
  EXPECT_EQ(e.n, 0u);
  EXPECT_TRUE(std::isnan(e.mean));
  EXPECT_FALSE(e.ci95.available());
  EXPECT_EQ(e.ci95.method, "no interval: n=0");

  BlockSums one;
  one.Add(0.25);
  e = one.Bootstrap();
  EXPECT_EQ(e.n, 1u);
  EXPECT_DOUBLE_EQ(e.mean, 0.25);
  EXPECT_FALSE(e.ci95.available());
  EXPECT_EQ(e.ci95.method, "no interval: n=1");
}

// A deterministic AR(1) series (correlated like neighbouring positions) with mean `mu`.
std::vector<double> Ar1(std::uint64_t seed, std::size_t n, double mu) {
  std::uint64_t state = seed;
  auto uniform = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  std::vector<double> out;
  double x = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double noise = uniform() + uniform() + uniform() - 1.5;  // mean 0
    x = 0.5 * x + noise;
    out.push_back(mu + x);
  }
  return out;
}

TEST(BlockBootstrapTest, TheSameValuesGiveTheSameIntervalEveryTime) {
  BlockSums a, b;
  for (double v : Ar1(7, 500, 1.0)) {
    a.Add(v);
    b.Add(v);
  }
  const Estimate x = a.Bootstrap(), y = b.Bootstrap();
  EXPECT_EQ(x.ci95.lo, y.ci95.lo);
  EXPECT_EQ(x.ci95.hi, y.ci95.hi);
  EXPECT_EQ(x.ci95.method, "block bootstrap (block 8, 1000 resamples)");
  EXPECT_LT(x.ci95.lo, x.mean);
  EXPECT_GT(x.ci95.hi, x.mean);
  // Another seed draws other resamples: the fixed seed is what makes reports reproducible.
  EXPECT_NE(a.Bootstrap(kBootstrapResamples, kBootstrapSeed + 1).ci95.lo, x.ci95.lo);
}

TEST(BlockBootstrapTest, CoversTheTrueMeanOfCorrelatedSeriesAboutNinetyFivePercentOfTheTime) {
  constexpr int kSeries = 200;
  int covered = 0;
  for (int s = 0; s < kSeries; ++s) {
    BlockSums sums;
    for (double v : Ar1(1000 + static_cast<std::uint64_t>(s), 400, 2.0)) sums.Add(v);
    const Interval i = sums.Bootstrap().ci95;
    if (i.lo <= 2.0 && 2.0 <= i.hi) ++covered;
  }
  // Percentile block bootstraps undercover a little at this n; far below would mean the
  // correlation is ignored, all 200 would mean the interval is uselessly wide.
  EXPECT_GE(covered, 170);
  EXPECT_LT(covered, kSeries);
}

TEST(BlockSumsTest, MemoryStaysCappedAndTheMeanExact) {
  BlockSums sums(64);
  double total = 0.0;
  for (int i = 0; i < 100000; ++i) {
    sums.Add(static_cast<double>(i % 7));
    total += static_cast<double>(i % 7);
  }
  EXPECT_LE(sums.blocks(), 64u);
  EXPECT_EQ(sums.block_size(), 2048u);
  EXPECT_EQ(sums.count(), 100000u);
  EXPECT_DOUBLE_EQ(sums.mean(), total / 100000.0);
  const Estimate e = sums.Bootstrap();
  ASSERT_TRUE(e.ci95.available());
  EXPECT_LE(e.ci95.lo, e.mean);
  EXPECT_GE(e.ci95.hi, e.mean);
  // ceil(100000^(1/3)) = 47 positions, rounded up to one stored block of 2048.
  EXPECT_EQ(e.ci95.method, "block bootstrap (block 2048, 1000 resamples)");
}

TEST(IntervalOverlapTest, MissingIntervalsCannotSeparate) {
  EXPECT_TRUE(Overlap({0.0, 1.0, ""}, {0.5, 2.0, ""}));
  EXPECT_FALSE(Overlap({0.0, 1.0, ""}, {1.5, 2.0, ""}));
  EXPECT_TRUE(Overlap({0.0, 1.0, ""}, Interval{}));
}

}  // namespace
}  // namespace orch::report
