#include "model/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "model/split_mix64.h"

namespace orch::model {
namespace {

float Bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

TEST(HalfFloatTest, F16RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(F32ToF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(F32ToF16Bits(1.0f + 0x1p-11f), 0x3c00);             // tie: down to even
  EXPECT_EQ(F32ToF16Bits(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie: up to even
  EXPECT_EQ(F32ToF16Bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above the tie
  EXPECT_EQ(F32ToF16Bits(0.1f), 0x2e66);
}

TEST(HalfFloatTest, F16OverflowsToInfinityAndKeepsSpecialValues) {
  EXPECT_EQ(F32ToF16Bits(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(F32ToF16Bits(65519.0f), 0x7bff);  // below the tie
  EXPECT_EQ(F32ToF16Bits(65520.0f), 0x7c00);  // tie rounds to even: infinity
  EXPECT_EQ(F32ToF16Bits(1e10f), 0x7c00);
  EXPECT_EQ(F32ToF16Bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(F32ToF16Bits(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
  EXPECT_EQ(F32ToF16Bits(Bits(0x7f800001u)) & 0x7e00, 0x7e00);  // signalling NaN: quiet
  EXPECT_EQ(F32ToF16Bits(-0.0f), 0x8000);
}

TEST(HalfFloatTest, F16SubnormalsRoundCorrectly) {
  EXPECT_EQ(F32ToF16Bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16Bits(0x1p-25f), 0x0000);  // tie: down to zero
  EXPECT_EQ(F32ToF16Bits(0x1p-25f + 0x1p-40f), 0x0001);
  EXPECT_EQ(F32ToF16Bits(3 * 0x1p-25f), 0x0002);         // tie: up to even
  EXPECT_EQ(F32ToF16Bits(0x1p-14f - 0x1p-25f), 0x0400);  // carries into the normals
  EXPECT_EQ(F32ToF16Bits(-0x1p-30f), 0x8000);
  EXPECT_EQ(F32ToF16Bits(0x1p-14f), 0x0400);  // smallest normal
}

TEST(HalfFloatTest, Bf16RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(F32ToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(F32ToBf16Bits(1.0f + 0x1p-8f), 0x3f80);      // tie: down to even
  EXPECT_EQ(F32ToBf16Bits(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie: up to even
  EXPECT_EQ(F32ToBf16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(F32ToBf16Bits(std::numeric_limits<float>::max()), 0x7f80);  // to infinity
  EXPECT_EQ(F32ToBf16Bits(-0.0f), 0x8000);
  EXPECT_EQ(F32ToBf16Bits(Bits(0x7f800001u)), 0x7fc0);  // NaN stays NaN, made quiet
  EXPECT_EQ(F32ToBf16Bits(Bits(0xff810000u)), 0xffc1);
}

TEST(HalfFloatTest, EveryHalfValueSurvivesARoundTrip) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    auto bits = static_cast<std::uint16_t>(b);
    bool f16_nan = (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0;
    if (!f16_nan) {
      ASSERT_EQ(F32ToF16Bits(F16BitsToF32(bits)), bits) << std::hex << b;
    }
    bool bf16_nan = (bits & 0x7f80) == 0x7f80 && (bits & 0x7f) != 0;
    if (!bf16_nan) {
      ASSERT_EQ(F32ToBf16Bits(Bf16BitsToF32(bits)), bits) << std::hex << b;
    }
  }
  EXPECT_EQ(F16BitsToF32(0x0001), 0x1p-24f);
  EXPECT_EQ(F16BitsToF32(0xfbff), -65504.0f);
}

#if defined(__FLT16_MAX__)
// The compiler's own _Float16 conversion (correctly rounded) as an independent oracle.
TEST(HalfFloatTest, F16AgreesWithTheCompilersConversionOnRandomFloats) {
  SplitMix64 random(42);
  for (int i = 0; i < 1000000; ++i) {
    auto bits = static_cast<std::uint32_t>(random.Next());
    // Every other value has an exponent near f16's range (subnormal to overflow).
    if (i % 2 == 1) bits = (bits & 0x807fffffu) | ((100u + (bits >> 24) % 46u) << 23);
    float value = Bits(bits);
    if (std::isnan(value)) continue;
    _Float16 half = static_cast<_Float16>(value);
    std::uint16_t expected;
    std::memcpy(&expected, &half, sizeof(expected));
    ASSERT_EQ(F32ToF16Bits(value), expected) << std::hex << bits;
  }
}
#endif

}  // namespace
}  // namespace orch::model
