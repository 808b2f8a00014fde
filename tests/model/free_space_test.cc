#include "model/free_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace orch::model {
namespace {

using ::testing::HasSubstr;

FreeSpaceReader Reports(std::uint64_t bytes) {
  return [bytes](const std::string&) -> Result<std::uint64_t> { return bytes; };
}

TEST(FreeSpaceTest, AWriteFitsOnlyWithItsMargin) {
  std::uint64_t bytes = 100ull << 20;
  std::uint64_t needed = bytes + FreeSpaceMargin(bytes);
  EXPECT_EQ(FreeSpaceMargin(bytes), (64ull << 20) + bytes / 8);
  EXPECT_TRUE(CheckFreeSpace("/cache", "x", bytes, Reports(needed)).ok());
  Status refused = CheckFreeSpace("/cache", "synth-1.gguf", bytes, Reports(needed - 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kIoError);
  EXPECT_THAT(refused.message(),
              HasSubstr("not enough free space in /cache to write synth-1.gguf"));
  EXPECT_THAT(refused.message(), HasSubstr("needs " + std::to_string(needed) + " bytes"));
  EXPECT_THAT(refused.message(),
              HasSubstr(std::to_string(needed - 1) + " bytes (0.2 GiB) are free"));
}

TEST(FreeSpaceTest, AReaderErrorNamesTheFolder) {
  FreeSpaceReader broken = [](const std::string&) -> Result<std::uint64_t> {
    return IoError("statvfs failed");
  };
  Status status = CheckFreeSpace("/cache", "x", 1, broken);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_THAT(status.message(), HasSubstr("free space of /cache"));
}

TEST(FreeSpaceTest, StatvfsReadsARealFileSystemAndNamesAMissingFolder) {
  Result<std::uint64_t> free = StatvfsFreeSpace(std::filesystem::temp_directory_path().string());
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_GT(*free, 0u);
  Result<std::uint64_t> missing = StatvfsFreeSpace("/nonexistent-orch-dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent-orch-dir"));
}

// The quantized size comes from the source's size and both types' bits per weight,
// rounded up: f16 -> q4_0 keeps 4.5 of every 16 bits.
TEST(FreeSpaceTest, AQuantizedVariantIsEstimatedFromTheBitsPerWeight) {
  EXPECT_EQ(QuantizedSizeBound(1600, "f16", "q4_0"), 450u);
  EXPECT_EQ(QuantizedSizeBound(3200, "f32", "q8_0"), 850u);
  EXPECT_EQ(QuantizedSizeBound(1000, "bf16", "f32"), 2000u);
  EXPECT_EQ(QuantizedSizeBound(1000, "f16", "q4_k_m"), 411u);  // q6_k's 6.5625: ceil(410.2)
  // Unknown names: the source counts as f16, the target as f32 (the widest).
  EXPECT_EQ(QuantizedSizeBound(1000, "mystery", "q8_0"), 532u);
  EXPECT_EQ(QuantizedSizeBound(1000, "f16", "mystery"), 2000u);
  EXPECT_EQ(BitsPerWeight("q2_k"), 4.5);
  EXPECT_EQ(BitsPerWeight("nope"), std::nullopt);
}

}  // namespace
}  // namespace orch::model
