#include "digest/row_digest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "tests/digest/reference_top.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

using testing::ReferenceTop;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

RowDigest Digest(const std::vector<float>& row, std::uint32_t k = kDefaultTopK,
                 std::int32_t target = kNoTarget) {
  RowDigest digest;
  const Status status = ComputeRowDigest(row, {k, target}, &digest);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return digest;
}

// Two-pass double-precision logsumexp and entropy.
std::pair<double, double> ReferenceSoftmaxStats(const std::vector<float>& row) {
  const double max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (const float x : row) sum += std::exp(x - max);
  const double lse = max + std::log(sum);
  double entropy = 0.0;
  for (const float x : row) {
    const double p = std::exp(x - lse);
    if (p > 0.0) entropy -= p * (x - lse);
  }
  return {lse, entropy};
}

TEST(RowDigestTest, KeepsTheKLargestLogitsBestFirst) {
  const RowDigest d = Digest({0.5f, 3.0f, -1.0f, 2.0f, 7.0f, 1.0f}, 3);
  EXPECT_EQ(d.top, (std::vector<TokenLogit>{{4, 7.0f}, {1, 3.0f}, {3, 2.0f}}));
  EXPECT_EQ(d.argmax, 4);
  EXPECT_EQ(d.vocab_size, 6u);
  EXPECT_TRUE(d.is_distribution());
}

TEST(RowDigestTest, BreaksTiesByLowerTokenId) {
  const RowDigest d = Digest({1.0f, 5.0f, 2.0f, 5.0f, 2.0f, 5.0f, 2.0f}, 5);
  EXPECT_EQ(d.top,
            (std::vector<TokenLogit>{{1, 5.0f}, {3, 5.0f}, {5, 5.0f}, {2, 2.0f}, {4, 2.0f}}));
  EXPECT_EQ(d.argmax, 1);
}

TEST(RowDigestTest, ClampsKToTheVocabulary) {
  const RowDigest d = Digest({2.0f, 1.0f, 3.0f}, 20);
  EXPECT_EQ(d.top, (std::vector<TokenLogit>{{2, 3.0f}, {0, 2.0f}, {1, 1.0f}}));
}

TEST(RowDigestTest, MatchesTheContractAcrossBlockBoundaries) {
  testing::RowGenerator gen(7);
  for (const std::size_t vocab : {1u, 2047u, 2048u, 2049u, 6145u, 32000u}) {
    std::vector<float> row = gen.Row(vocab, 2.0, 6.0);
    for (std::size_t i = 0; i < vocab; i += 97) row[i] = row[vocab / 2];  // ties
    EXPECT_EQ(Digest(row, 50).top, ReferenceTop(row, 50)) << "vocab " << vocab;
  }
}

TEST(RowDigestTest, RejectsAnEmptyRow) {
  RowDigest d;
  const Status status = ComputeRowDigest({}, {}, &d);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("empty"), std::string::npos);
}

TEST(RowDigestTest, RejectsKOutsideOneToMax) {
  RowDigest d;
  const std::vector<float> row(10, 0.0f);
  EXPECT_EQ(ComputeRowDigest(row, {0, kNoTarget}, &d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeRowDigest(row, {kMaxTopK + 1, kNoTarget}, &d).code(),
            StatusCode::kInvalidArgument);
}

TEST(RowDigestTest, RejectsATargetOutsideTheVocabularyAndLeavesOutputAlone) {
  RowDigest d = Digest({1.0f, 2.0f});
  const RowDigest before = d;
  EXPECT_EQ(ComputeRowDigest(std::vector<float>{1.0f, 2.0f, 3.0f}, {20, 3}, &d).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeRowDigest(std::vector<float>{1.0f}, {20, -2}, &d).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(d, before);
}

TEST(RowDigestTest, RejectsATopBufferSmallerThanK) {
  std::vector<TokenLogit> top(2);
  RowSummary summary;
  EXPECT_EQ(DigestRowInto(std::vector<float>(5, 1.0f), {3, kNoTarget}, top, &summary).code(),
            StatusCode::kInvalidArgument);
}

TEST(RowDigestTest, UniformRowHasLogVocabularyEntropy) {
  const RowDigest d = Digest(std::vector<float>(1000, 3.0f));
  EXPECT_NEAR(d.logsumexp, 3.0 + std::log(1000.0), 1e-9);
  EXPECT_NEAR(d.entropy, std::log(1000.0), 1e-9);
}

TEST(RowDigestTest, TwoTokenRowHasTheClosedFormEntropy) {
  // softmax(0, ln 3) = (1/4, 3/4).
  const RowDigest d = Digest({0.0f, static_cast<float>(std::log(3.0))});
  EXPECT_NEAR(d.logsumexp, std::log(4.0), 1e-7);
  EXPECT_NEAR(d.entropy, -(0.25 * std::log(0.25) + 0.75 * std::log(0.75)), 1e-7);
}

TEST(RowDigestTest, OneHotRowHasZeroEntropy) {
  std::vector<float> row(5000, -kInf);
  row[1234] = 4.5f;
  const RowDigest d = Digest(row);
  EXPECT_EQ(d.entropy, 0.0);
  EXPECT_EQ(d.logsumexp, 4.5);
  EXPECT_TRUE(d.is_distribution());
}

TEST(RowDigestTest, OnlineStatisticsMatchATwoPassDoubleReference) {
  testing::RowGenerator gen(11);
  for (const double sigma : {0.5, 2.0, 4.0}) {
    for (const double boost : {0.0, 8.0, 25.0}) {
      const std::vector<float> row = gen.Row(152064, sigma, boost);
      const auto [lse, entropy] = ReferenceSoftmaxStats(row);
      const RowDigest d = Digest(row);
      EXPECT_NEAR(d.logsumexp, lse, 1e-6) << sigma << " " << boost;
      EXPECT_NEAR(d.entropy, entropy, 1e-6 * std::max(1.0, entropy));
    }
  }
}

TEST(RowDigestTest, RescalesCorrectlyWhenTheMaximumArrivesInALaterBlock) {
  std::vector<float> row(10000);
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = 0.01f * static_cast<float>(i);
  row.back() = 1000.0f;  // dwarfs everything before it
  const auto [lse, entropy] = ReferenceSoftmaxStats(row);
  const RowDigest d = Digest(row);
  EXPECT_NEAR(d.logsumexp, lse, 1e-9);
  EXPECT_NEAR(d.entropy, entropy, 1e-9);
  EXPECT_EQ(d.argmax, 9999);
}

TEST(RowDigestTest, MaskedTokensAtMinusInfinityCarryNoMass) {
  testing::RowGenerator gen(3);
  const std::vector<float> kept = gen.Row(3000, 2.0, 5.0);
  std::vector<float> masked;
  for (const float x : kept) {
    masked.push_back(x);
    masked.push_back(-kInf);
  }
  const RowDigest a = Digest(kept);
  const RowDigest b = Digest(masked);
  EXPECT_TRUE(b.is_distribution());
  EXPECT_NEAR(b.logsumexp, a.logsumexp, 1e-6);
  EXPECT_NEAR(b.entropy, a.entropy, 1e-6);
  EXPECT_EQ(b.argmax, 2 * a.argmax);
}

TEST(RowDigestTest, FlagsANanRowButStillDigestsItDeterministically) {
  std::vector<float> row = {1.0f, kNan, 3.0f, 2.0f};
  const RowDigest d = Digest(row, 3);
  EXPECT_EQ(d.flags, kRowHasNan);
  EXPECT_FALSE(d.is_distribution());
  EXPECT_TRUE(std::isnan(d.logsumexp));
  EXPECT_TRUE(std::isnan(d.entropy));
  EXPECT_EQ(d.top, (std::vector<TokenLogit>{{2, 3.0f}, {3, 2.0f}, {0, 1.0f}}));
  EXPECT_EQ(d.hash, HashRow(row));
  const RowDigest again = Digest(row, 3);
  EXPECT_EQ(again.hash, d.hash);
  EXPECT_EQ(again.top, d.top);
  EXPECT_EQ(again.flags, d.flags);
}

TEST(RowDigestTest, FlagsPositiveInfinity) {
  const RowDigest d = Digest({1.0f, kInf, 3.0f});
  EXPECT_EQ(d.flags, kRowHasPosInf);
  EXPECT_EQ(d.argmax, 1);
  EXPECT_TRUE(std::isnan(d.logsumexp));
}

TEST(RowDigestTest, FlagsRowsWithoutAFiniteLogit) {
  const RowDigest masked = Digest({-kInf, -kInf, -kInf});
  EXPECT_EQ(masked.flags, kRowNoFiniteLogit);
  EXPECT_EQ(masked.argmax, 0);

  const RowDigest all_nan = Digest({kNan, kNan});
  EXPECT_EQ(all_nan.flags, kRowHasNan | kRowNoFiniteLogit);
  EXPECT_EQ(all_nan.argmax, -1);
  EXPECT_TRUE(all_nan.top.empty());
}

TEST(RowDigestTest, RecordsTheTargetTokensLogit) {
  const RowDigest d = Digest({0.25f, -3.5f, 9.0f}, 1, 1);
  EXPECT_EQ(d.target_id, 1);
  EXPECT_EQ(d.target_logit, -3.5f);
  EXPECT_EQ(Digest({0.25f}).target_id, kNoTarget);
}

// Golden value: the hash is part of the stored data and must never change. It
// equals XXH3_128bits over the 4000 little-endian bytes, printed in canonical
// form.
TEST(RowDigestTest, HashOfAFixedRowIsTheSameOnEveryMachine) {
  std::vector<float> row(1000);
  for (std::size_t i = 0; i < row.size(); ++i) {
    row[i] = 0.25f * static_cast<float>(i) - 3.0f;
  }
  EXPECT_EQ(RowHashHex(Digest(row).hash), "31e6e93dfbca7e21ef4c571890b9fba5");
}

TEST(RowDigestTest, HashSeesEveryBit) {
  const RowDigest zero = Digest({0.0f, 1.0f});
  EXPECT_NE(Digest({-0.0f, 1.0f}).hash, zero.hash);
  EXPECT_NE(Digest({0.0f, std::nextafter(1.0f, 2.0f)}).hash, zero.hash);
}

TEST(RowDigestTest, BlockwiseHashEqualsTheOneShotHash) {
  testing::RowGenerator gen(5);
  for (const std::size_t vocab : {1u, 100u, 2048u, 5000u, 152064u}) {
    const std::vector<float> row = gen.Row(vocab, 1.0, 0.0);
    EXPECT_EQ(Digest(row).hash, HashRow(row)) << vocab;
  }
}

TEST(RowDigestTest, ReusedDigestDoesNotReallocateItsTopList) {
  testing::RowGenerator gen(9);
  RowDigest d;
  ASSERT_TRUE(ComputeRowDigest(gen.Row(4096, 1.0, 0.0), {}, &d).ok());
  const TokenLogit* buffer = d.top.data();
  ASSERT_TRUE(ComputeRowDigest(gen.Row(4096, 1.0, 0.0), {}, &d).ok());
  ASSERT_TRUE(ComputeRowDigest(std::vector<float>{kNan, 1.0f}, {}, &d).ok());
  ASSERT_TRUE(ComputeRowDigest(gen.Row(4096, 1.0, 0.0), {}, &d).ok());
  EXPECT_EQ(d.top.data(), buffer);
}

}  // namespace
}  // namespace orch::digest
