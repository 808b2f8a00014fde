// Branch-free e^t for t <= 0 in single precision, scalar and in vector lanes.
//
// Used by the row digest's online logsumexp/entropy, where one exponential per
// logit is the whole cost. Contract: for t in [kExpCutoff, 0] the relative
// error is below 2e-7 (about 2 ulp; Cephes expf polynomial with Cody-Waite
// reduction); for t below kExpCutoff, including -inf, and for NaN the result is
// exactly 0 (e^-80 < 2e-35, which no row sum can notice). Positive t gives an
// unspecified value without undefined behaviour; callers flag such rows. All
// forms perform the same float operations in the same order (the library is
// built with -ffp-contract=off), so a lane of ExpNonPositive4 or
// ExpNonPositiveLanes equals ExpNonPositive bit for bit and the result depends
// only on t, never on the CPU or on how many lanes it shares an instruction
// with.
#pragma once

#include <bit>
#include <cstdint>

// Vectors wider than SSE pass by value differently with and without AVX; these
// functions are always inlined, so no such call exists.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace orch::digest {

inline constexpr float kExpCutoff = -80.0f;

// Four floats in one SSE/NEON register (GCC/Clang vector extension).
using Float4 = float __attribute__((vector_size(16)));
using Int4 = std::int32_t __attribute__((vector_size(16)));
using Uint4 = std::uint32_t __attribute__((vector_size(16)));

namespace internal {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: round to nearest
inline constexpr std::uint32_t kRoundMagicBits = 0x4B400000u;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;

// e^r for |r| <= ln(2) / 2; works on float and Float4 alike.
template <typename T>
[[gnu::always_inline]] inline T ExpPolynomial(T r) {
  const T r2 = r * r;
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r2 + r + 1.0f;
}
}  // namespace internal

inline float ExpNonPositive(float t) {
  using namespace internal;
  const std::uint32_t keep = t >= kExpCutoff ? ~0u : 0u;  // false for NaN
  const float x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(t) & keep);
  const float shifted = x * kLog2e + kRoundMagic;
  const float n = shifted - kRoundMagic;  // round(x / ln 2), an integer in [-116, 0]
  const std::uint32_t n_bits = std::bit_cast<std::uint32_t>(shifted) - kRoundMagicBits;
  const float p = ExpPolynomial((x - n * kLn2Hi) - n * kLn2Lo);
  const std::uint32_t scaled = std::bit_cast<std::uint32_t>(p) + (n_bits << 23);
  return std::bit_cast<float>(scaled & keep);  // e^r * 2^n, or 0
}

// ExpNonPositive lane by lane for any float vector F (4, 8, 16 lanes) with
// unsigned twin U.
template <typename F, typename U>
[[gnu::always_inline]] inline F ExpNonPositiveLanes(F t) {
  using namespace internal;
  const U keep = reinterpret_cast<U>(t >= kExpCutoff);  // lanes of ~0 or 0
  const F x = reinterpret_cast<F>(reinterpret_cast<U>(t) & keep);
  const F shifted = x * kLog2e + kRoundMagic;
  const F n = shifted - kRoundMagic;
  const U n_bits = reinterpret_cast<U>(shifted) - kRoundMagicBits;
  const F p = ExpPolynomial((x - n * kLn2Hi) - n * kLn2Lo);
  const U scaled = reinterpret_cast<U>(p) + (n_bits << 23);
  return reinterpret_cast<F>(scaled & keep);
}

[[gnu::always_inline]] inline Float4 ExpNonPositive4(Float4 t) {
  return ExpNonPositiveLanes<Float4, Uint4>(t);
}

// Digest v2's exponential (row_pass_v2.cc): the Cody-Waite reduction above
// (n = round(t / ln 2), r = (t - n ln2_hi) - n ln2_lo, the first step exact),
// then e^r = 1 + r + r^2 s(r) with s of degree 4 (degree 6 in all, one less
// than ExpNonPositive; minimax for relative error on [-ln 2 / 2, ln 2 / 2]:
// 3.1e-9 in exact arithmetic), and 2^n added to the exponent bits. Contract,
// for t in [kExpCutoff, 0]: relative error below 1.5e-7 (float evaluation
// dominates), measured in fast_exp_test.cc; t below kExpCutoff, -inf and NaN
// give exactly 0. Same operations in every lane and every vector width, so the
// bits depend on t only.
namespace internal {
template <typename T>
[[gnu::always_inline]] inline T ExpReducedV2(T r) {
  const T r2 = r * r;
  T s = r * 1.381461283e-3f + 8.368709858e-3f;
  s = s * r + 4.166838737e-2f;
  s = s * r + 1.666652069e-1f;
  s = s * r + 4.999999345e-1f;
  return s * r2 + r + 1.0f;
}
}  // namespace internal

// e^t for the lanes of F (unsigned twin U) under the v2 contract above.
template <typename F, typename U>
[[gnu::always_inline]] inline F ExpNonPositiveV2Lanes(F t) {
  using namespace internal;
  const U keep = reinterpret_cast<U>(t >= kExpCutoff);  // lanes of ~0 or 0
  const F x = reinterpret_cast<F>(reinterpret_cast<U>(t) & keep);
  const F shifted = x * kLog2e + kRoundMagic;  // n in its low mantissa bits
  const F n = shifted - kRoundMagic;
  const F p = ExpReducedV2((x - n * kLn2Hi) - n * kLn2Lo);
  // (bits of shifted) << 23 is n << 23: the magic's own bits shift out.
  const U scaled = reinterpret_cast<U>(p) + (reinterpret_cast<U>(shifted) << 23);
  return reinterpret_cast<F>(scaled & keep);
}

// ExpNonPositiveV2Lanes for one float (lane 0 of the 4-lane form).
inline float ExpNonPositiveV2(float t) {
  return ExpNonPositiveV2Lanes<Float4, Uint4>(Float4{t, t, t, t})[0];
}

}  // namespace orch::digest

#pragma GCC diagnostic pop
