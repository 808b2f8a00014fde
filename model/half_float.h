// IEEE binary16 (f16) and bfloat16 (bf16) conversions, written out bit by bit so that a
// model generated from a recipe has the same bytes on every machine and compiler (no
// hardware conversion instructions, no library calls).
//
// Float -> half rounds to nearest, ties to even; values too large become infinity, values
// too small become (signed) zero or a subnormal. NaN stays NaN (quiet, sign kept).
#pragma once

#include <cstdint>

namespace orch::model {

std::uint16_t F32ToF16Bits(float value);
std::uint16_t F32ToBf16Bits(float value);

// Exact widening conversions (every half value is a float).
float F16BitsToF32(std::uint16_t bits);
float Bf16BitsToF32(std::uint16_t bits);

}  // namespace orch::model
