#include "base/bytes.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

TEST(BytesTest, WritesLittleEndianAndReadsItBack) {
  std::string out;
  AppendU32(out, 0x01020304u);
  AppendI32(out, -2);
  AppendU64(out, 0x1122334455667788ull);
  AppendF32(out, 1.5f);
  AppendF64(out, -0.25);
  EXPECT_EQ(out.substr(0, 4), std::string("\x04\x03\x02\x01", 4));
  ByteReader r(out);
  std::uint32_t u32;
  std::int32_t i32;
  std::uint64_t u64;
  float f32;
  double f64;
  ASSERT_TRUE(r.ReadU32(&u32) && r.ReadI32(&i32) && r.ReadU64(&u64) && r.ReadF32(&f32) &&
              r.ReadF64(&f64));
  EXPECT_EQ(u32, 0x01020304u);
  EXPECT_EQ(i32, -2);
  EXPECT_EQ(u64, 0x1122334455667788ull);
  EXPECT_EQ(f32, 1.5f);
  EXPECT_EQ(f64, -0.25);
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(BytesTest, ReadingPastTheEndFailsAndLeavesTheValue) {
  ByteReader r(std::string_view("\x01\x02", 2));
  std::uint32_t v = 7;
  EXPECT_FALSE(r.ReadU32(&v));
  EXPECT_EQ(v, 7u);
  std::string_view bytes;
  EXPECT_FALSE(r.ReadBytes(3, &bytes));
  EXPECT_TRUE(r.ReadBytes(2, &bytes));
}

}  // namespace
}  // namespace orch
