#include "model/half_float.h"

#include <cstring>

namespace orch::model {
namespace {

std::uint32_t BitsOf(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FloatOf(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// `kept` shifted right by `shift` bits, rounded to nearest with ties to even.
std::uint32_t ShiftRoundEven(std::uint32_t kept, int shift) {
  std::uint32_t result = kept >> shift;
  std::uint32_t rest = kept & ((1u << shift) - 1);
  std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1u) != 0)) ++result;
  return result;
}

}  // namespace

std::uint16_t F32ToF16Bits(float value) {
  std::uint32_t bits = BitsOf(value);
  auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  int exponent = static_cast<int>((bits >> 23) & 0xffu);
  std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) {  // infinity, or NaN made quiet with its top payload bits
    std::uint32_t nan = mantissa != 0 ? 0x200u | (mantissa >> 13) : 0u;
    return static_cast<std::uint16_t>(sign | 0x7c00u | nan);
  }
  int half_exponent = exponent - 127 + 15;
  if (half_exponent >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (half_exponent <= 0) {  // subnormal in f16, or zero
    if (half_exponent < -10) return sign;
    std::uint32_t significand = mantissa | 0x800000u;
    return static_cast<std::uint16_t>(sign | ShiftRoundEven(significand, 14 - half_exponent));
  }
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  std::uint32_t rounded =
      (static_cast<std::uint32_t>(half_exponent) << 10) + ShiftRoundEven(mantissa, 13);
  return static_cast<std::uint16_t>(sign | rounded);
}

std::uint16_t F32ToBf16Bits(float value) {
  std::uint32_t bits = BitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and top payload, make quiet
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  }
  std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float F16BitsToF32(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return FloatOf(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return FloatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return FloatOf(sign);
  // Subnormal: mantissa * 2^-24, exact in float.
  float magnitude = static_cast<float>(mantissa) * FloatOf(0x33800000u);  // 2^-24
  return sign != 0 ? -magnitude : magnitude;
}

float Bf16BitsToF32(std::uint16_t bits) { return FloatOf(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace orch::model
