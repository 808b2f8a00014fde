#include "base/check.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

TEST(CheckDeathTest, FailedCheckNamesConditionAndMessage) {
  int slots = 0;
  EXPECT_DEATH(ORCH_CHECK(slots > 0) << "slots=" << slots, "check failed: slots > 0 slots=0");
}

TEST(CheckTest, PassingCheckDoesNothing) {
  int calls = 0;
  ORCH_CHECK(++calls == 1) << "evaluated once";
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace orch
