#include "digest/record_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace orch::digest {
namespace {

using ::testing::HasSubstr;

PositionRecord Sample(bool full_row) {
  std::vector<float> row = {0.5f, -1.25f, 3.0f, 2.0f, -0.0f, 7.5f};
  PositionRecord r;
  r.position = (std::uint64_t{1} << 40) + 3;
  r.input_token = 17;
  r.output_token = -1;
  DigestOptions options;
  options.top_k = 3;
  options.target_id = 2;
  EXPECT_TRUE(ComputeRowDigest(row, options, &r.digest).ok());
  if (full_row) r.full_row = row;
  return r;
}

TEST(RecordCodecTest, RoundTripsWithAndWithoutFullRows) {
  for (bool full : {false, true}) {
    PositionRecord r = Sample(full);
    Result<PositionRecord> back = DecodePositionRecord(EncodePositionRecord(r));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, r);
  }
}

TEST(RecordCodecTest, EncodingIsStableAcrossMachines) {
  // 1 version + 8 position + 4 + 4 tokens + 52 digest scalars + 4 + 3 x 8 top-k + 4 = 101.
  EXPECT_EQ(EncodePositionRecord(Sample(false)).size(), 101u);
}

TEST(RecordCodecTest, EveryTruncationIsDataLossNotACrash) {
  std::string bytes = EncodePositionRecord(Sample(true));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    Result<PositionRecord> r = DecodePositionRecord(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  }
}

TEST(RecordCodecTest, RejectsUnknownVersionTrailingBytesAndImpossibleCounts) {
  std::string bytes = EncodePositionRecord(Sample(false));
  std::string wrong_version = bytes;
  wrong_version[0] = 9;
  EXPECT_THAT(DecodePositionRecord(wrong_version).status().message(),
              HasSubstr("unknown version 9 (this build reads 1 to 2)"));
  EXPECT_THAT(DecodePositionRecord(bytes + "x").status().message(), HasSubstr("1 trailing bytes"));
  std::string huge_top = bytes;
  std::size_t top_count_offset = 1 + 8 + 4 + 4 + 52;
  huge_top[top_count_offset + 3] = '\x7f';
  EXPECT_THAT(DecodePositionRecord(huge_top).status().message(), HasSubstr("is impossible here"));
}

// The version byte is the digest's version; v1 and v2 records share one layout
// and both decode to the digest they were encoded from.
TEST(RecordCodecTest, VersionByteIsTheDigestVersionAndBothVersionsRoundTrip) {
  for (const DigestVersion version : {DigestVersion::kV1, DigestVersion::kV2}) {
    PositionRecord r = Sample(true);
    ASSERT_TRUE(ComputeRowDigest(r.full_row, {3, 2, version}, &r.digest).ok());
    const std::string bytes = EncodePositionRecord(r);
    EXPECT_EQ(bytes[0], static_cast<char>(version));
    Result<PositionRecord> back = DecodePositionRecord(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->digest.version, version);
    EXPECT_EQ(*back, r);
  }
  EXPECT_EQ(Sample(false).digest.version, DigestVersion::kV2);  // the default
  EXPECT_EQ(EncodePositionRecord(Sample(false))[0], 2);
}

TEST(RecordCodecTest, FullRowMustMatchTheVocabulary) {
  PositionRecord r = Sample(true);
  r.full_row.pop_back();
  EXPECT_THAT(DecodePositionRecord(EncodePositionRecord(r)).status().message(),
              HasSubstr("full row of 5 values for a vocabulary of 6"));
}

}  // namespace
}  // namespace orch::digest
