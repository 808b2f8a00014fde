#include "digest/fast_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace orch::digest {
namespace {

TEST(FastExpTest, StaysWithinTwoTenthsOfAMillionthRelativeError) {
  double worst = 0.0;
  for (float t = kExpCutoff; t <= 0.0f; t += 0.000731f) {
    const double exact = std::exp(static_cast<double>(t));
    worst = std::max(worst, std::fabs(ExpNonPositive(t) - exact) / exact);
  }
  EXPECT_LT(worst, 2e-7);
}

TEST(FastExpTest, IsExactAtZero) { EXPECT_EQ(ExpNonPositive(0.0f), 1.0f); }

TEST(FastExpTest, GivesZeroBelowTheCutoffForMinusInfinityAndForNan) {
  EXPECT_EQ(ExpNonPositive(-80.5f), 0.0f);
  EXPECT_EQ(ExpNonPositive(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ExpNonPositive(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

}  // namespace
}  // namespace orch::digest
