#include "report/plot_scale.h"

#include <gtest/gtest.h>

#include <cmath>

namespace orch::report {
namespace {

TEST(PlotScaleTest, ValuesSpanningMoreThanTwoDecadesGetALogScaleWithALabelPerDecade) {
  const PlotScale s = ChooseScale({3e-6, 2e-4, 0.04, 0.0, NAN});
  EXPECT_TRUE(s.log);
  EXPECT_STREQ(s.name(), "log");
  EXPECT_DOUBLE_EQ(s.low, 1e-6);
  EXPECT_DOUBLE_EQ(s.high, 0.1);
  ASSERT_EQ(s.ticks.size(), 6u);
  EXPECT_EQ(s.ticks.front().label, "1e-06");
  EXPECT_EQ(s.ticks.back().label, "1e-01");
  // Zero (a bit-identical position) sits at the bottom; a decade is a fifth of the axis.
  EXPECT_EQ(s.Fraction(0.0), 0.0);
  EXPECT_NEAR(s.Fraction(1e-5), 0.2, 1e-12);
  EXPECT_NEAR(s.Fraction(0.1), 1.0, 1e-12);
}

TEST(PlotScaleTest, ValuesWithinTwoDecadesGetALinearScaleFromZeroWithRoundTicks) {
  const PlotScale s = ChooseScale({0.0021, 0.013, 0.0183});
  EXPECT_FALSE(s.log);
  EXPECT_EQ(s.low, 0.0);
  EXPECT_NEAR(s.high, 0.02, 1e-12);
  ASSERT_GE(s.ticks.size(), 3u);
  ASSERT_LE(s.ticks.size(), 6u);
  EXPECT_EQ(s.ticks.front().label, "0");
  EXPECT_EQ(s.ticks.back().label, "0.02");
  for (std::size_t i = 1; i < s.ticks.size(); ++i) {
    EXPECT_GT(s.ticks[i].value, s.ticks[i - 1].value);
    EXPECT_FALSE(s.ticks[i].label.empty());
  }
  EXPECT_NEAR(s.Fraction(0.01), 0.5, 1e-12);
}

TEST(PlotScaleTest, ManyDecadesKeepAboutSixLabels) {
  const PlotScale s = ChooseScale({1e-12, 10.0});
  EXPECT_TRUE(s.log);
  EXPECT_LE(s.ticks.size(), 8u);
  EXPECT_DOUBLE_EQ(s.ticks.front().value, s.low);
  EXPECT_DOUBLE_EQ(s.ticks.back().value, s.high);
}

TEST(PlotScaleTest, NothingPositiveGivesZeroToOne) {
  const PlotScale s = ChooseScale({0.0, 0.0, NAN});
  EXPECT_FALSE(s.log);
  EXPECT_EQ(s.high, 1.0);
  EXPECT_EQ(s.ticks.front().label, "0");
}

}  // namespace
}  // namespace orch::report
