#include "store/keys.h"

#include <gtest/gtest.h>

namespace orch::store {
namespace {

TEST(KeysTest, DigestKeysSortByPositionWithinARun) {
  uint64_t positions[] = {0, 1, 255, 256, 65535, 65536, 1ull << 32, UINT64_MAX};
  for (size_t i = 1; i < std::size(positions); ++i) {
    EXPECT_LT(DigestKey("r", positions[i - 1]), DigestKey("r", positions[i])) << positions[i];
  }
  EXPECT_EQ(TrailingNumber(DigestKey("run", 65536)), 65536u);
}

TEST(KeysTest, NoRunKeyStartsWithAnotherRunsPrefix) {
  EXPECT_NE(DigestKey("r10", 0).rfind(IdPrefix("r1"), 0), 0u);
  EXPECT_EQ(DigestKey("r1", 9).rfind(IdPrefix("r1"), 0), 0u);
}

TEST(KeysTest, DescribeKeyShowsPrintableKeysAsTextAndOthersAsHex) {
  EXPECT_EQ(DescribeKey(Table::kRuns, "r1"), "runs/r1");
  EXPECT_EQ(DescribeKey(Table::kEvents, EventKey(258)), "events/0000000000000102");
}

}  // namespace
}  // namespace orch::store
