// The C ABI, exercised through its C functions only (as a ctypes driver would).
#include "digest/orch_digest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "digest/kl_divergence.h"
#include "digest/row_digest.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

TEST(OrchDigestCTest, ReportsItsAbiVersion) {
  EXPECT_EQ(orch_digest_abi_version(), static_cast<uint32_t>(ORCH_DIGEST_ABI_VERSION));
}

void ExpectSameDigest(const orch_row_digest& c, const std::vector<orch_token_logit>& top,
                      const RowDigest& cpp, float target_logit) {
  EXPECT_EQ(c.vocab_size, cpp.vocab_size);
  EXPECT_EQ(c.flags, cpp.flags);
  EXPECT_EQ(c.argmax, cpp.argmax);
  EXPECT_EQ(c.logsumexp, cpp.logsumexp);
  EXPECT_EQ(c.entropy, cpp.entropy);
  EXPECT_EQ(c.hash_low, cpp.hash.low);
  EXPECT_EQ(c.hash_high, cpp.hash.high);
  EXPECT_EQ(c.target_id, 42);
  EXPECT_EQ(c.target_logit, target_logit);
  ASSERT_EQ(c.top_count, 20u);
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(top[i].id, cpp.top[i].id);
    EXPECT_EQ(top[i].logit, cpp.top[i].logit);
  }
}

// orch_digest_row keeps its meaning from before digest v2: version 1.
TEST(OrchDigestCTest, DigestRowGivesTheCppApisVersion1Digest) {
  testing::RowGenerator gen(13);
  const std::vector<float> row = gen.Row(32000, 2.0, 7.0);
  std::vector<orch_token_logit> top(20);
  orch_row_digest c{};
  ASSERT_EQ(orch_digest_row(row.data(), row.size(), 20, 42, top.data(), 20, &c), ORCH_DIGEST_OK);

  RowDigest cpp;
  ASSERT_TRUE(ComputeRowDigest(row, {20, 42, DigestVersion::kV1}, &cpp).ok());
  ExpectSameDigest(c, top, cpp, row[42]);
}

TEST(OrchDigestCTest, DigestRowVersionedGivesTheCppApisDigestOfThatVersion) {
  testing::RowGenerator gen(14);
  const std::vector<float> row = gen.Row(32000, 2.0, 7.0);
  for (const DigestVersion version : {DigestVersion::kV1, DigestVersion::kV2}) {
    std::vector<orch_token_logit> top(20);
    orch_row_digest c{};
    ASSERT_EQ(orch_digest_row_versioned(static_cast<uint32_t>(version), row.data(), row.size(), 20,
                                        42, top.data(), 20, &c),
              ORCH_DIGEST_OK);
    RowDigest cpp;
    ASSERT_TRUE(ComputeRowDigest(row, {20, 42, version}, &cpp).ok());
    ExpectSameDigest(c, top, cpp, row[42]);
  }
  EXPECT_EQ(static_cast<DigestVersion>(ORCH_DIGEST_VERSION_CURRENT), kCurrentDigestVersion);
}

TEST(OrchDigestCTest, DigestRowVersionedRejectsAnUnknownVersion) {
  const float row[4] = {1, 2, 3, 4};
  orch_token_logit top[4];
  orch_row_digest d{};
  for (const uint32_t version : {0u, 3u}) {
    EXPECT_EQ(orch_digest_row_versioned(version, row, 4, 2, -1, top, 4, &d),
              ORCH_DIGEST_INVALID_ARGUMENT);
  }
}

TEST(OrchDigestCTest, FlagsANanRow) {
  const std::vector<float> row = {1.0f, NAN, 2.0f};
  orch_token_logit top[3];
  orch_row_digest d{};
  ASSERT_EQ(orch_digest_row(row.data(), 3, 3, ORCH_DIGEST_NO_TARGET, top, 3, &d), ORCH_DIGEST_OK);
  EXPECT_EQ(d.flags, ORCH_DIGEST_ROW_HAS_NAN);
  EXPECT_EQ(d.top_count, 2u);
  EXPECT_TRUE(std::isnan(d.logsumexp));
}

TEST(OrchDigestCTest, ReturnsErrorCodesInsteadOfThrowing) {
  const float row[4] = {1, 2, 3, 4};
  orch_token_logit top[4];
  orch_row_digest d{};
  EXPECT_EQ(orch_digest_row(nullptr, 4, 2, -1, top, 4, &d), ORCH_DIGEST_NULL_POINTER);
  EXPECT_EQ(orch_digest_row(row, 4, 2, -1, top, 4, nullptr), ORCH_DIGEST_NULL_POINTER);
  EXPECT_EQ(orch_digest_row(row, 0, 2, -1, top, 4, &d), ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_row(row, 4, 0, -1, top, 4, &d), ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_row(row, 4, 2, 4, top, 4, &d), ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_row(row, 4, 3, -1, top, 2, &d), ORCH_DIGEST_BUFFER_TOO_SMALL);
  // k beyond the vocabulary only needs vocabulary-many slots.
  EXPECT_EQ(orch_digest_row(row, 4, 20, -1, top, 4, &d), ORCH_DIGEST_OK);
  EXPECT_EQ(d.top_count, 4u);
}

TEST(OrchDigestCTest, NamesEveryStatus) {
  EXPECT_EQ(std::string(orch_digest_status_name(ORCH_DIGEST_OK)), "OK");
  EXPECT_EQ(std::string(orch_digest_status_name(ORCH_DIGEST_BUFFER_TOO_SMALL)), "BUFFER_TOO_SMALL");
  EXPECT_EQ(std::string(orch_digest_status_name(99)), "UNKNOWN");
}

TEST(OrchDigestCTest, ComputesExactKlDivergence) {
  const float p[2] = {0.0f, static_cast<float>(std::log(3.0))};
  const float q[2] = {0.0f, 0.0f};
  double kld = -1;
  ASSERT_EQ(orch_digest_kl_divergence_exact(p, q, 2, &kld), ORCH_DIGEST_OK);
  EXPECT_NEAR(kld, 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-7);
  const float nan_row[2] = {NAN, 0.0f};
  EXPECT_EQ(orch_digest_kl_divergence_exact(p, nan_row, 2, &kld), ORCH_DIGEST_INVALID_ARGUMENT);
  EXPECT_EQ(orch_digest_kl_divergence_exact(p, q, 2, nullptr), ORCH_DIGEST_NULL_POINTER);
}

}  // namespace
}  // namespace orch::digest
