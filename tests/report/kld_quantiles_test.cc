#include "report/kld_quantiles.h"

#include <gtest/gtest.h>

#include <cmath>

namespace orch::report {
namespace {

TEST(KldQuantilesTest, IsExactWithLlamaCppDefinitionsBelowTheLimit) {
  KldQuantiles q;
  for (double v : {4.0, 1.0, 3.0, 2.0}) q.Add(v);
  EXPECT_FALSE(q.approximate());
  EXPECT_DOUBLE_EQ(q.Median(), 2.5);
  EXPECT_DOUBLE_EQ(q.P99(), 3.0 + 0.97 * 1.0);  // rank 0.99 * 3 = 2.97
}

TEST(KldQuantilesTest, EmptyGivesNaN) {
  KldQuantiles q;
  EXPECT_TRUE(std::isnan(q.Median()));
}

TEST(KldQuantilesTest, MovesToABoundedHistogramWithinItsRelativeError) {
  KldQuantiles q;
  const std::size_t n = kExactQuantileLimit + 1;
  // Values 1e-6 .. 1e-2 spread log-uniformly: median 1e-4, p99 ~ 10^(-6 + 4 * 0.99).
  for (std::size_t i = 0; i < n; ++i) {
    q.Add(std::pow(10.0, -6.0 + 4.0 * static_cast<double>(i) / static_cast<double>(n - 1)));
  }
  EXPECT_TRUE(q.approximate());
  const double tolerance = std::pow(10.0, 1.0 / kBinsPerDecade) - 1.0;
  EXPECT_NEAR(q.Median() / 1e-4, 1.0, tolerance);
  EXPECT_NEAR(q.P99() / std::pow(10.0, -6.0 + 4.0 * 0.99), 1.0, tolerance);
}

}  // namespace
}  // namespace orch::report
