#include "digest/fast_exp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

// A 16-float vector returned by value: the psABI note concerns calls between
// files built for different instruction sets, and this one is inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

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

// Digest v2's exponential: relative error below 1.5e-7 on [kExpCutoff, 0]
// whatever |t| (fast_exp.h), exactly 1 at 0, exactly 0 below the cutoff and
// for -inf and NaN.
TEST(FastExpTest, V2StaysWithinItsDocumentedRelativeError) {
  double worst = 0.0;
  for (float t = kExpCutoff; t <= 0.0f; t += 0.000731f) {
    const double exact = std::exp(static_cast<double>(t));
    worst = std::max(worst, std::fabs(ExpNonPositiveV2(t) - exact) / exact);
  }
  std::printf("v2 exp worst relative error %.3g\n", worst);
  EXPECT_LT(worst, 1.5e-7);
  EXPECT_EQ(ExpNonPositiveV2(0.0f), 1.0f);
  EXPECT_EQ(ExpNonPositiveV2(-0.0f), 1.0f);
  EXPECT_EQ(ExpNonPositiveV2(std::nextafter(kExpCutoff, -100.0f)), 0.0f);
  EXPECT_EQ(ExpNonPositiveV2(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ExpNonPositiveV2(std::numeric_limits<float>::quiet_NaN()), 0.0f);
  EXPECT_GT(ExpNonPositiveV2(kExpCutoff), 0.0f);
}

TEST(FastExpTest, EveryVectorLaneEqualsTheScalarFormBitForBit) {
  using Float16 = float __attribute__((vector_size(64)));
  using Uint16 = std::uint32_t __attribute__((vector_size(64)));
  const float specials[] = {0.0f,
                            -0.0f,
                            -1e-30f,
                            -0.5f,
                            -87.0f,
                            -80.0f,
                            -79.99999f,
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  Float16 t = {};
  for (float start = kExpCutoff - 1.0f; start <= 0.0f; start += 0.0137f) {
    for (int lane = 0; lane < 16; ++lane) {
      t[lane] = lane < 9 && start == kExpCutoff - 1.0f ? specials[lane]
                                                       : std::min(0.0f, start + 0.00091f * lane);
    }
    const Float16 wide = ExpNonPositiveLanes<Float16, Uint16>(t);
    const Float4 narrow = ExpNonPositive4(Float4{t[4], t[5], t[6], t[7]});
    for (int lane = 0; lane < 16; ++lane) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(wide[lane]),
                std::bit_cast<std::uint32_t>(ExpNonPositive(t[lane])))
          << "t = " << t[lane];
    }
    for (int lane = 0; lane < 4; ++lane) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(narrow[lane]),
                std::bit_cast<std::uint32_t>(wide[lane + 4]));
    }
  }
}

TEST(FastExpTest, IsExactAtZero) { EXPECT_EQ(ExpNonPositive(0.0f), 1.0f); }

TEST(FastExpTest, GivesZeroBelowTheCutoffForMinusInfinityAndForNan) {
  EXPECT_EQ(ExpNonPositive(-80.5f), 0.0f);
  EXPECT_EQ(ExpNonPositive(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(ExpNonPositive(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

}  // namespace
}  // namespace orch::digest
