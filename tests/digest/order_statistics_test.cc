#include "digest/order_statistics.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace orch::digest {
namespace {

TEST(OrderStatisticsTest, MedianOfAnOddCountIsTheMiddleValue) {
  EXPECT_EQ(SortedMedian(std::vector<double>{1, 2, 9}), 2.0);
}

TEST(OrderStatisticsTest, MedianOfAnEvenCountAveragesTheMiddlePair) {
  EXPECT_EQ(SortedMedian(std::vector<double>{1, 2, 4, 9}), 3.0);
}

TEST(OrderStatisticsTest, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {0, 10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(SortedPercentile(v, 0.5), 20.0);
  EXPECT_DOUBLE_EQ(SortedPercentile(v, 0.99), 39.6);  // rank 3.96
  EXPECT_EQ(SortedPercentile(v, 0.0), 0.0);
  EXPECT_EQ(SortedPercentile(v, 1.0), 40.0);
}

TEST(OrderStatisticsTest, PercentileOnARankKeepsInfinityOutOfTheInterpolation) {
  const std::vector<double> v = {1, 2, std::numeric_limits<double>::infinity()};
  EXPECT_EQ(SortedPercentile(v, 0.5), 2.0);
}

TEST(OrderStatisticsDeathTest, EmptyInputIsABug) {
  EXPECT_DEATH(SortedMedian({}), "median of no values");
}

}  // namespace
}  // namespace orch::digest
