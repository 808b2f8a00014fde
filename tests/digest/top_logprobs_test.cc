// Top-k-only rows (digest/top_logprobs.h, the C ABI's orch_digest_top_logprobs)
// and how comparisons treat them (docs/metrics.md, "Top-k-only rows"): every
// expected value here is computed by hand from rows of two or three tokens.
#include "digest/top_logprobs.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "digest/kl_divergence.h"
#include "digest/orch_digest.h"
#include "digest/position_compare.h"
#include "digest/record_codec.h"
#include "digest/stream_compare.h"

namespace orch::digest {
namespace {

constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();

RowDigest Top(std::vector<std::int32_t> ids, std::vector<float> logprobs, std::uint64_t vocab = 8,
              std::int32_t target = kNoTarget, float target_logprob = kNanF,
              std::uint32_t extra = 0) {
  RowDigest d;
  const Status s = DigestTopLogprobs(
      {kCurrentDigestVersion, ids, logprobs, vocab, target, target_logprob, extra}, &d);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return d;
}

// Probabilities as log-probabilities, the way a server returns them.
std::vector<float> Logs(std::vector<double> p) {
  std::vector<float> out;
  for (double v : p) out.push_back(static_cast<float>(std::log(v)));
  return out;
}

Status TopStatus(std::vector<std::int32_t> ids, std::vector<float> logprobs, std::uint64_t vocab,
                 std::int32_t target = kNoTarget, std::uint32_t extra = 0) {
  RowDigest d;
  return DigestTopLogprobs({kCurrentDigestVersion, ids, logprobs, vocab, target, kNanF, extra}, &d);
}

TEST(DigestTopLogprobsTest, SortsByValueDescendingTiesByLowerIdAndFlagsTheRow) {
  const RowDigest d = Top({5, 2, 9, 7}, {-2.0f, -0.5f, -2.0f, -3.0f}, 10);
  const std::vector<TokenLogit> expected = {{2, -0.5f}, {5, -2.0f}, {9, -2.0f}, {7, -3.0f}};
  EXPECT_EQ(d.top, expected);
  EXPECT_EQ(d.argmax, 2);
  EXPECT_EQ(d.flags, kRowTopKOnly);
  EXPECT_TRUE(d.is_top_k_only());
  EXPECT_FALSE(d.is_processed());
  EXPECT_TRUE(d.is_distribution());  // what can be computed from it is defined
  EXPECT_EQ(d.logsumexp, 0.0);
  EXPECT_TRUE(std::isnan(d.entropy));
  EXPECT_EQ(d.vocab_size, 10u);
  EXPECT_EQ(d.target_id, kNoTarget);
}

TEST(DigestTopLogprobsTest, HashIsXxh3OfTheSortedPairsLittleEndian) {
  const RowDigest d = Top({3, 1}, {-1.0f, -0.25f});
  // Sorted: (1, -0.25), (3, -1.0); each pair int32 id then float32 bits, LE.
  unsigned char bytes[16];
  const std::int32_t ids[2] = {1, 3};
  const float values[2] = {-0.25f, -1.0f};
  for (int i = 0; i < 2; ++i) {
    std::uint32_t id_bits, value_bits;
    std::memcpy(&id_bits, &ids[i], 4);
    std::memcpy(&value_bits, &values[i], 4);
    for (int b = 0; b < 4; ++b) {
      bytes[8 * i + b] = static_cast<unsigned char>(id_bits >> (8 * b));
      bytes[8 * i + 4 + b] = static_cast<unsigned char>(value_bits >> (8 * b));
    }
  }
  const XXH128_hash_t expected = XXH3_128bits(bytes, sizeof bytes);
  EXPECT_EQ(d.hash, (RowHash{expected.low64, expected.high64}));
  // The input order does not matter; one bit of one value does.
  EXPECT_EQ(Top({1, 3}, {-0.25f, -1.0f}).hash, d.hash);
  EXPECT_NE(Top({3, 1}, {std::nextafter(-1.0f, 0.0f), -0.25f}).hash, d.hash);
  EXPECT_NE(Top({4, 1}, {-1.0f, -0.25f}).hash, d.hash);
}

TEST(DigestTopLogprobsTest, ProcessedIsTheOnlyExtraFlag) {
  EXPECT_EQ(Top({0}, {0.0f}, 4, kNoTarget, kNanF, kRowProcessed).flags,
            kRowTopKOnly | kRowProcessed);
  const Status s = TopStatus({0}, {0.0f}, 4, kNoTarget, kRowHasNan);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("extra flags 1"), std::string::npos) << s.message();
}

TEST(DigestTopLogprobsTest, RejectsBadRequestsNamingTheValue) {
  const std::vector<std::int32_t> many_ids(kMaxTopK + 1, 0);
  const std::vector<float> many_values(kMaxTopK + 1, 0.0f);
  const struct {
    Status status;
    const char* says;
  } cases[] = {
      {TopStatus({}, {}, 4), "k 0"},
      {TopStatus(many_ids, many_values, 0), "k 1025"},
      {TopStatus({1, 2, 1}, {-1.0f, -2.0f, -3.0f}, 4), "token id 1 returned twice"},
      {TopStatus({1, 4}, {-1.0f, -2.0f}, 4), "token id 4 outside a vocabulary of 4"},
      {TopStatus({-2}, {-1.0f}, 0), "token id -2"},
      {TopStatus({1}, {-1.0f}, 4, 9), "target token 9"},
      {TopStatus({1, 2}, {-1.0f}, 4), "2 ids but 1 log-probabilities"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.status.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_NE(c.status.message().find(c.says), std::string::npos) << c.status.message();
  }
  // An unknown vocabulary (0) accepts any id and target.
  EXPECT_TRUE(TopStatus({100000}, {0.0f}, 0, 7).ok());
}

TEST(DigestTopLogprobsTest, NanValuesFlagTheRowAndSortLastButAMissingTargetDoesNot) {
  const RowDigest nan_row = Top({1, 2}, {kNanF, -1.0f});
  EXPECT_EQ(nan_row.flags, kRowTopKOnly | kRowHasNan);
  EXPECT_FALSE(nan_row.is_distribution());
  EXPECT_EQ(nan_row.argmax, 2);
  EXPECT_EQ(nan_row.top[1].id, 1);
  EXPECT_TRUE(std::isnan(nan_row.logsumexp));

  const RowDigest missing = Top({1, 2}, {-0.5f, -1.0f}, 8, 6);  // target not returned
  EXPECT_EQ(missing.flags, kRowTopKOnly);
  EXPECT_EQ(missing.target_id, 6);
  EXPECT_TRUE(std::isnan(missing.target_logit));
  // A target among the returned pairs takes their value; a given value stands.
  EXPECT_EQ(Top({1, 2}, {-0.5f, -1.0f}, 8, 2).target_logit, -1.0f);
  EXPECT_EQ(Top({1, 2}, {-0.5f, -1.0f}, 8, 6, -7.5f).target_logit, -7.5f);
}

TEST(DigestTopLogprobsTest, RecordCodecCarriesATopKOnlyDigestBitForBit) {
  PositionRecord record;
  record.position = 4;
  record.input_token = 3;
  record.digest = Top({1, 2}, {-0.5f, -1.0f}, 0, 6, kNanF, kRowProcessed);
  const std::string bytes = EncodePositionRecord(record);
  Result<PositionRecord> decoded = DecodePositionRecord(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->digest.flags, kRowTopKOnly | kRowProcessed);
  EXPECT_EQ(decoded->digest.top, record.digest.top);
  EXPECT_EQ(decoded->digest.hash, record.digest.hash);
  EXPECT_TRUE(std::isnan(decoded->digest.target_logit));
  EXPECT_EQ(EncodePositionRecord(*decoded), bytes);
}

TEST(OrchDigestTopLogprobsCTest, GivesTheCppDigestAndChecksItsArguments) {
  const std::int32_t ids[] = {5, 2, 9};
  const float values[] = {-2.0f, -0.5f, -2.0f};
  orch_token_logit top[3];
  orch_row_digest out;
  ASSERT_EQ(orch_digest_top_logprobs(ORCH_DIGEST_VERSION_CURRENT, ids, values, 3, 10, 9, kNanF,
                                     ORCH_ROW_PROCESSED, top, 3, &out),
            ORCH_DIGEST_OK);
  const RowDigest cpp = Top({5, 2, 9}, {-2.0f, -0.5f, -2.0f}, 10, 9, kNanF, kRowProcessed);
  EXPECT_EQ(out.flags, ORCH_ROW_TOP_K_ONLY | ORCH_ROW_PROCESSED);
  EXPECT_EQ(out.argmax, 2);
  EXPECT_EQ(out.top_count, 3u);
  EXPECT_EQ(out.hash_low, cpp.hash.low);
  EXPECT_EQ(out.hash_high, cpp.hash.high);
  EXPECT_EQ(out.logsumexp, 0.0);
  EXPECT_EQ(out.target_logit, -2.0f);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(top[i].id, cpp.top[static_cast<std::size_t>(i)].id);
    EXPECT_EQ(top[i].logit, cpp.top[static_cast<std::size_t>(i)].logit);
  }
  EXPECT_EQ(orch_digest_top_logprobs(2, ids, values, 3, 10, -1, kNanF, 0, top, 2, &out),
            ORCH_DIGEST_BUFFER_TOO_SMALL);
  EXPECT_EQ(orch_digest_top_logprobs(2, ids, values, 0, 10, -1, kNanF, 0, top, 3, &out),
            ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_top_logprobs(2, ids, values, ORCH_DIGEST_MAX_TOP_K + 1, 10, -1, kNanF, 0,
                                     top, 3, &out),
            ORCH_DIGEST_INVALID_ARGUMENT);
  const std::int32_t twice[] = {5, 5};
  EXPECT_EQ(orch_digest_top_logprobs(2, twice, values, 2, 10, -1, kNanF, 0, top, 3, &out),
            ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_top_logprobs(7, ids, values, 3, 10, -1, kNanF, 0, top, 3, &out),
            ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_top_logprobs(2, nullptr, values, 3, 10, -1, kNanF, 0, top, 3, &out),
            ORCH_DIGEST_NULL_POINTER);
}

// P returns p = (0.5, 0.3) for tokens 0, 1 (tail 0.2); Q returns (0.4, 0.4) (tail 0.2).
TEST(ReturnedTopKKlTest, SumsTheCommonReturnedTokensAndOneTailBucketPerSide) {
  const RowDigest p = Top({0, 1}, Logs({0.5, 0.3}));
  const RowDigest q = Top({0, 1}, Logs({0.4, 0.4}));
  const double expected = 0.5 * std::log(0.5 / 0.4) + 0.3 * std::log(0.3 / 0.4);  // tails equal
  EXPECT_NEAR(ReturnedTopKKlDivergence(p, q), expected, 1e-7);
  EXPECT_NEAR(TailMass(p), 0.2, 1e-7);
  EXPECT_NEAR(TailMass(q), 0.2, 1e-7);
}

// A token one side did not return lies in its tail: P returns tokens 0, 1 with
// (0.5, 0.3), Q returns 1, 2 with (0.6, 0.1). Only token 1 is bucketed:
// KL = 0.3 ln(0.3 / 0.6) + 0.7 ln(0.7 / 0.4).
TEST(ReturnedTopKKlTest, TokensOnlyOneSideReturnedJoinTheTails) {
  const RowDigest p = Top({0, 1}, Logs({0.5, 0.3}));
  const RowDigest q = Top({1, 2}, Logs({0.6, 0.1}));
  const double expected = 0.3 * std::log(0.3 / 0.6) + 0.7 * std::log(0.7 / 0.4);
  EXPECT_NEAR(ReturnedTopKKlDivergence(p, q), expected, 1e-7);
  EXPECT_NEAR(TailMass(q), 0.3, 1e-7);
}

PositionComparison Compare(const RowDigest& p, const RowDigest& q) {
  Result<PositionComparison> c = ComparePosition(0, p, q, {}, {});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : PositionComparison{};
}

TEST(ComparePositionTopKTest, TwoTopKRowsAreIdenticalOnlyWithTheSameIdsAndBits) {
  const RowDigest p = Top({0, 1}, Logs({0.5, 0.3}), 8, 1);
  const PositionComparison same = Compare(p, Top({1, 0}, Logs({0.3, 0.5}), 8, 1));
  EXPECT_TRUE(same.identical);
  EXPECT_TRUE(same.identity_comparable);
  EXPECT_TRUE(same.returned_top_k);
  EXPECT_EQ(same.kld, 0.0);
  EXPECT_EQ(same.kld_method, KldMethod::kReturnedTopK);

  std::vector<float> nudged = Logs({0.5, 0.3});
  nudged[1] = std::nextafter(nudged[1], 0.0f);
  const PositionComparison off = Compare(p, Top({0, 1}, nudged, 8, 1));
  EXPECT_FALSE(off.identical);
  EXPECT_TRUE(off.same_top1);
  EXPECT_EQ(off.kld_method, KldMethod::kReturnedTopK);
  // The same values, once processed: not the same row.
  EXPECT_FALSE(Compare(p, Top({0, 1}, Logs({0.5, 0.3}), 8, 1, kNanF, kRowProcessed)).identical);
}

TEST(ComparePositionTopKTest, AFullRowAgainstATopKRowIsNotComparableForIdentity) {
  // The full row is p = (0.5, 0.3, 0.2) as logits log p; Q returns (0.4, 0.4).
  const std::vector<float> row = Logs({0.5, 0.3, 0.2});
  RowDigest full;
  ASSERT_TRUE(ComputeRowDigest(row, {20, 1}, &full).ok());
  const RowDigest top = Top({0, 1}, Logs({0.4, 0.4}), 3, 1);
  const PositionComparison c = Compare(full, top);
  EXPECT_FALSE(c.identical);
  EXPECT_FALSE(c.identity_comparable);
  EXPECT_TRUE(c.returned_top_k);
  EXPECT_TRUE(c.same_top1);
  EXPECT_EQ(c.kld_method, KldMethod::kReturnedTopK);
  // Buckets 0 and 1; tails 0.2 and 0.2.
  EXPECT_NEAR(c.kld, 0.5 * std::log(0.5 / 0.4) + 0.3 * std::log(0.3 / 0.4), 1e-6);
  EXPECT_NEAR(c.tail_reference, 0.0, 1e-6);  // the full row's top holds all three tokens
  EXPECT_NEAR(c.tail_other, 0.2, 1e-6);
  EXPECT_NEAR(c.delta_target_logprob, std::log(0.4 / 0.3), 1e-6);
  // |log q(a) - log p(a)| at P's argmax a = 0.
  EXPECT_NEAR(c.abs_top1_logit_delta, std::log(0.5 / 0.4), 1e-6);
}

TEST(ComparePositionTopKTest, TargetFiguresNeedTheTargetReturnedOnBothSides) {
  const RowDigest p = Top({0, 1}, Logs({0.5, 0.3}), 8, 1);
  const PositionComparison both = Compare(p, Top({0, 1}, Logs({0.4, 0.4}), 8, 1));
  EXPECT_NEAR(both.delta_target_logprob, std::log(0.4 / 0.3), 1e-6);
  EXPECT_NEAR(both.delta_p, 0.1, 1e-6);
  EXPECT_NEAR(both.nll_reference, -std::log(0.3), 1e-6);
  const PositionComparison one = Compare(p, Top({0, 2}, Logs({0.4, 0.4}), 8, 1));
  EXPECT_TRUE(std::isnan(one.delta_target_logprob));
  EXPECT_TRUE(std::isnan(one.delta_p));
  EXPECT_TRUE(std::isnan(one.nll_other));
}

TEST(ComparePositionTopKTest, AnUnknownVocabularyComparesWithAKnownOne) {
  const PositionComparison c =
      Compare(Top({0, 1}, Logs({0.5, 0.3}), 0), Top({0, 1}, Logs({0.5, 0.3}), 32000));
  EXPECT_TRUE(c.identical);
  Result<PositionComparison> full_vs_full =
      ComparePosition(0, Top({0}, {0.0f}, 4), Top({0}, {0.0f}, 5), {}, {});
  EXPECT_EQ(full_vs_full.status().code(), StatusCode::kInvalidArgument);
}

TEST(SummarizeTopKTest, ReturnedTopKKldIsKeptApartAndMixedRowsAreNotComparable) {
  const std::vector<float> row = Logs({0.5, 0.3, 0.2});
  RowDigest full;
  ASSERT_TRUE(ComputeRowDigest(row, {20, kNoTarget}, &full).ok());
  const RowDigest top = Top({0, 1}, Logs({0.4, 0.4}), 3);
  const std::vector<RowDigest> p = {full, full, full};
  const std::vector<RowDigest> q = {full, top, top};
  Result<StreamComparison> c = CompareStreams({p, {}}, {q, {}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const StreamSummary& s = c->summary;
  EXPECT_EQ(s.identical_rows, 1u);
  EXPECT_EQ(s.not_comparable_rows, 2u);
  EXPECT_EQ(s.returned_top_k_positions, 2u);
  EXPECT_FALSE(s.first_divergence.has_value());  // no comparable position differs
  EXPECT_EQ(s.common_prefix, 1u);
  EXPECT_EQ(s.kld.count, 1u);  // the identical full-row position only
  EXPECT_EQ(s.kld.mean, 0.0);
  EXPECT_EQ(s.returned_kld.count, 2u);
  EXPECT_NEAR(s.returned_kld.mean, 0.5 * std::log(0.5 / 0.4) + 0.3 * std::log(0.3 / 0.4), 1e-6);
}

}  // namespace
}  // namespace orch::digest
