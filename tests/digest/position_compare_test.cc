#include "digest/position_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "digest/kl_divergence.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

RowDigest CompareDigest(const std::vector<float>& row, std::uint32_t k = kDefaultTopK,
                        std::int32_t target = kNoTarget) {
  RowDigest d;
  EXPECT_TRUE(ComputeRowDigest(row, {k, target}, &d).ok());
  return d;
}

PositionComparison Compare(const RowDigest& p, const RowDigest& q,
                           std::span<const float> p_row = {}, std::span<const float> q_row = {}) {
  Result<PositionComparison> c = ComparePosition(3, p, q, p_row, q_row);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : PositionComparison{};
}

TEST(ComparePositionTest, IdenticalRowsAreBitIdenticalWithZeroDivergence) {
  const std::vector<float> row = {1.0f, 4.0f, 2.0f};
  const PositionComparison c = Compare(CompareDigest(row, 20, 2), CompareDigest(row, 20, 2));
  EXPECT_EQ(c.position, 3u);
  EXPECT_TRUE(c.identical);
  EXPECT_TRUE(c.same_top1);
  EXPECT_TRUE(c.scored);
  EXPECT_EQ(c.kld, 0.0);
  EXPECT_EQ(c.delta_p, 0.0);
  EXPECT_EQ(c.abs_top1_logit_delta, 0.0);
}

// A v1 and a v2 digest of the same row: identical, with no metric moved by the
// versions' different last bits of logsumexp.
TEST(ComparePositionTest, DigestsOfDifferentVersionsOfOneRowAreIdentical) {
  const std::vector<float> row = testing::RowGenerator(8).Row(32000, 2.0, 5.0);
  RowDigest v1, v2;
  ASSERT_TRUE(ComputeRowDigest(row, {20, 7, DigestVersion::kV1}, &v1).ok());
  ASSERT_TRUE(ComputeRowDigest(row, {20, 7, DigestVersion::kV2}, &v2).ok());
  ASSERT_NE(v1.logsumexp, v2.logsumexp);  // what the comparison must look past
  for (const auto& [p, q] : {std::pair{v1, v2}, std::pair{v2, v1}}) {
    const PositionComparison c = Compare(p, q);
    EXPECT_TRUE(c.identical);
    EXPECT_TRUE(c.same_top1);
    EXPECT_EQ(c.kld, 0.0);
    EXPECT_EQ(c.delta_p, 0.0);
    EXPECT_EQ(c.nll_reference, c.nll_other);
    EXPECT_EQ(c.nll_reference, p.logsumexp - p.target_logit);
    EXPECT_EQ(c.abs_top1_logit_delta, 0.0);
  }
}

// Different rows keep each side's own statistics, whatever their versions.
TEST(ComparePositionTest, DifferentRowsOfDifferentVersionsUseEachSidesStatistics) {
  testing::RowGenerator gen(9);
  const std::vector<float> p_row = gen.Row(32000, 2.0, 5.0);
  const std::vector<float> q_row = gen.Perturbed(p_row, 0.01);
  RowDigest p, q;
  ASSERT_TRUE(ComputeRowDigest(p_row, {20, 7, DigestVersion::kV1}, &p).ok());
  ASSERT_TRUE(ComputeRowDigest(q_row, {20, 7, DigestVersion::kV2}, &q).ok());
  const PositionComparison c = Compare(p, q);
  EXPECT_FALSE(c.identical);
  EXPECT_EQ(c.nll_reference, p.logsumexp - p.target_logit);
  EXPECT_EQ(c.nll_other, q.logsumexp - q.target_logit);
}

TEST(ComparePositionTest, ReportsATopOneFlip) {
  const PositionComparison c =
      Compare(CompareDigest({1.0f, 3.0f, 2.9f}), CompareDigest({1.0f, 2.9f, 3.0f}));
  EXPECT_FALSE(c.identical);
  EXPECT_FALSE(c.same_top1);
  EXPECT_NEAR(c.abs_top1_logit_delta, 0.1, 1e-6);
  EXPECT_GT(c.kld, 0.0);
}

TEST(ComparePositionTest, DeltaPIsOtherMinusReferenceProbabilityOfTheTarget) {
  // P(target 1) = 3/4, Q(target 1) = 1/2.
  const std::vector<float> p = {0.0f, static_cast<float>(std::log(3.0))};
  const std::vector<float> q = {0.0f, 0.0f};
  const PositionComparison c = Compare(CompareDigest(p, 20, 1), CompareDigest(q, 20, 1));
  EXPECT_NEAR(c.delta_p, -0.25, 1e-7);
  EXPECT_NEAR(c.nll_reference, -std::log(0.75), 1e-7);
  EXPECT_NEAR(c.nll_other, std::log(2.0), 1e-7);
}

TEST(ComparePositionTest, LeavesTargetMetricsUndefinedWithoutATarget) {
  const PositionComparison c = Compare(CompareDigest({0.0f, 1.0f}), CompareDigest({0.0f, 2.0f}));
  EXPECT_TRUE(std::isnan(c.delta_p));
  EXPECT_TRUE(std::isnan(c.nll_reference));
}

TEST(ComparePositionTest, UsesExactKldOnlyWhenBothFullRowsExist) {
  testing::RowGenerator gen(4);
  const std::vector<float> p = gen.Row(5000, 2.0, 4.0);
  const std::vector<float> q = gen.Perturbed(p, 0.2);
  const RowDigest dp = CompareDigest(p, 5);
  const RowDigest dq = CompareDigest(q, 5);
  const PositionComparison exact = Compare(dp, dq, p, q);
  EXPECT_EQ(exact.kld_method, KldMethod::kExact);
  EXPECT_DOUBLE_EQ(exact.kld, *ExactKlDivergence(p, q));
  const PositionComparison approx = Compare(dp, dq, p, {});
  EXPECT_EQ(approx.kld_method, KldMethod::kTopK);
  EXPECT_DOUBLE_EQ(approx.kld, TopKKlDivergence(dp, dq));
}

TEST(ComparePositionTest, TopOneLogitDeltaNeedsQToKnowTheToken) {
  // P's argmax (0) is outside Q's top-1 and is not Q's target.
  const PositionComparison c =
      Compare(CompareDigest({5.0f, 1.0f}, 1), CompareDigest({1.0f, 5.0f}, 1));
  EXPECT_TRUE(std::isnan(c.abs_top1_logit_delta));
  const std::vector<float> q_row = {1.0f, 5.0f};
  EXPECT_EQ(Compare(CompareDigest({5.0f, 1.0f}, 1), CompareDigest(q_row, 1), {}, q_row)
                .abs_top1_logit_delta,
            4.0);
}

TEST(ComparePositionTest, ReportsANanRowWithoutScoringIt) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const PositionComparison c =
      Compare(CompareDigest({1.0f, 2.0f}, 20, 0), CompareDigest({nan, 2.0f}, 20, 0));
  EXPECT_FALSE(c.identical);
  EXPECT_FALSE(c.scored);
  EXPECT_EQ(c.kld_method, KldMethod::kNone);
  EXPECT_TRUE(std::isnan(c.kld));
  EXPECT_TRUE(std::isnan(c.delta_p));
  EXPECT_TRUE(c.same_top1);  // argmax ignores NaN logits
}

TEST(ComparePositionTest, RejectsDigestsOfDifferentWorkloads) {
  const RowDigest p = CompareDigest({1.0f, 2.0f}, 20, 0);
  EXPECT_EQ(ComparePosition(0, p, CompareDigest({1.0f, 2.0f, 3.0f}, 20, 0), {}, {}).status().code(),
            StatusCode::kInvalidArgument);
  const Status target = ComparePosition(7, p, CompareDigest({1.0f, 2.0f}, 20, 1), {}, {}).status();
  EXPECT_EQ(target.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(target.message().find("position 7"), std::string::npos);
}

TEST(ComparePositionTest, RejectsAFullRowThatIsNotTheDigestedRow) {
  const std::vector<float> row = {1.0f, 2.0f};
  const std::vector<float> other = {1.0f, 2.5f};
  const std::vector<float> longer = {1.0f, 2.0f, 3.0f};
  const RowDigest d = CompareDigest(row);
  EXPECT_EQ(ComparePosition(0, d, d, longer, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComparePosition(0, d, d, row, other).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace orch::digest
