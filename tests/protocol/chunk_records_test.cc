#include "protocol/chunk_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::protocol {
namespace {

using ::testing::HasSubstr;

TEST(ChunkRecordsTest, RoundTripsPositionsAndBytes) {
  std::vector<ChunkRecord> records = {
      {0, "a"}, {255, ""}, {65536, std::string(300, '\0')}, {std::uint64_t{1} << 40, "xyz"}};
  Result<std::vector<ChunkRecord>> back = DecodeChunkRecords(EncodeChunkRecords(records));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, records);
  EXPECT_TRUE(DecodeChunkRecords(EncodeChunkRecords({}))->empty());
}

TEST(ChunkRecordsTest, TruncationAndGarbageAreDataLoss) {
  std::string bytes = EncodeChunkRecords({{1, "abc"}, {2, "de"}});
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    Result<std::vector<ChunkRecord>> r = DecodeChunkRecords(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  }
  EXPECT_THAT(DecodeChunkRecords(bytes + "!").status().message(),
              HasSubstr("1 trailing bytes after 2 records"));
  std::string huge = "\xff\xff\xff\x7f";
  EXPECT_THAT(DecodeChunkRecords(huge).status().message(), HasSubstr("does not fit"));
}

}  // namespace
}  // namespace orch::protocol
