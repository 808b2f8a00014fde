// `orch plan` refuses a ctx smaller than what a workload needs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/plan.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Replace;
using testing::ValidSpecText;

// The valid spec (readme: 16 positions; story: max_tokens = 8) with a baseline ctx.
std::string WithContext(const std::string& ctx) {
  return Replace(ValidSpecText(), "threads = 1", "threads = 1\nctx = " + ctx);
}

TEST(ContextCheckTest, BaselineCtxSmallerThanEveryWorkloadNamesEachWorkloadAndBothNumbers) {
  std::string text = WithContext("8");
  std::string at = At(text, "8\nsampler");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(at + ": error: baseline.ctx: cell baseline: ctx = 8 is smaller than "
                               "workload \"readme\", which evaluates 16 positions; raise ctx to "
                               "at least 16",
                          at + ": error: baseline.ctx: cell baseline: ctx = 8 is smaller than "
                               "workload \"story\", which needs at least 9 tokens (max_tokens = "
                               "8 plus a prompt of at least one token); raise ctx to at least 9"));
}

TEST(ContextCheckTest, CtxEqualToTheNeedFits) {
  EXPECT_THAT(ErrorsOf(WithContext("16")), IsEmpty());
}

TEST(ContextCheckTest, CtxAlternativeIsCheckedAtItsOwnValue) {
  std::string text = Replace(WithContext("64"), "[alternatives]\n", "[alternatives]\nctx = [12]\n");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "12]") +
                          ": error: alternatives.ctx[0]: cell ctx=12: ctx = 12 is smaller than "
                          "workload \"readme\", which evaluates 16 positions; raise ctx to at "
                          "least 16"));
}

TEST(ContextCheckTest, OtherCellsAreNotReportedAgain) {
  // Every cell inherits the baseline's ctx; the problem is reported once per workload.
  EXPECT_EQ(ErrorsOf(WithContext("12")).size(), 1u);
}

TEST(ContextCheckTest, EnginesWithoutADeclarationAreCheckedToo) {
  std::string text =
      Replace(WithContext("12"), "engine = \"llama.cpp@v0.4.0\"", "engine = \"tgi@3.0\"");
  EXPECT_EQ(ErrorsOf(text).size(), 1u);
}

}  // namespace
}  // namespace orch::planner
