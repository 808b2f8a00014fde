#include "base/suggest.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

TEST(SuggestTest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("e2e-watch", "e2e-wach"), 1u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
}

TEST(SuggestTest, ClosestNameIsTheNearestWithinTwoEdits) {
  std::vector<std::string> known = {"kv-sweep", "quant-sweep", "threads"};
  EXPECT_EQ(ClosestName("quant-swep", known), "quant-sweep");
  EXPECT_EQ(ClosestName("treads", known), "threads");
  EXPECT_EQ(ClosestName("something-else", known), "");
  EXPECT_EQ(ClosestName("kv", {}), "");
}

}  // namespace
}  // namespace orch
