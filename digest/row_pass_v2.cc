// Digest v2's pass over a row (row_pass.h, RunRowPassV2). The hash, the NaN
// scan and the top-k are v1's, bit for bit. logsumexp and entropy differ from
// v1 in their last bits, because the sums are defined differently:
//
//  - the exponential is ExpNonPositiveV2Lanes (fast_exp.h): v1's Cody-Waite
//    reduction with a polynomial one degree shorter, relative error below
//    1.5e-7;
//  - element j of a block adds e^t and e^t * t, each widened to double, to
//    double lane j % 16, in increasing j; the lanes are rescaled lane by lane
//    when the running maximum grows and folded pairwise (lane i += lane i + h
//    for h = 8, 4, 2, 1) at the end of the row;
//  - a block whose maximum is more than SkipMargin(V) below the running
//    maximum adds nothing: SkipMargin(V) = (bit_width(V - 1) + 24) ln 2, so
//    everything skipped in a row weighs at most V e^-SkipMargin <= 2^-24 of
//    the final sum (the running maximum never exceeds the final one).
//
// Each vector width holds the 16 lanes of a sum in 32 / width registers of
// width / 2 doubles (a 16-float vector adds its low and high halves, widened,
// to lanes 0-7 and 8-15), so the same lane receives the same elements in the
// same order on every instruction set.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "digest/fast_exp.h"
#include "digest/row_pass.h"
#include "digest/row_pass_parts.h"

// Vectors wider than SSE pass by value differently with and without AVX; the
// helpers below that take them are internal and always inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace orch::digest::internal {
namespace {

constexpr std::size_t kBlockSizeV2 = 2048;
constexpr std::size_t kSumLanes = 16;
constexpr float kLn2 = 0.693147182f;

// Half a vector of N floats, and the same N / 2 lanes as doubles: one
// register on the instruction set that holds N floats (spelled out per width,
// as the vector extension takes no dependent sizes).
template <std::size_t N>
struct HalfLanes;

template <>
struct HalfLanes<4> {
  using Float = float __attribute__((vector_size(8)));
  using Double = double __attribute__((vector_size(16)));
};

template <>
struct HalfLanes<8> {
  using Float = float __attribute__((vector_size(16)));
  using Double = double __attribute__((vector_size(32)));
};

template <>
struct HalfLanes<16> {
  using Float = float __attribute__((vector_size(32)));
  using Double = double __attribute__((vector_size(64)));
};

float SkipMargin(std::size_t vocab) {
  const int bits = std::bit_width(vocab - 1);  // vocab <= 2^bits
  return static_cast<float>(bits + 24) * kLn2;
}

// Online softmax sums relative to the running maximum m, in kSumLanes double
// lanes: sum = sum_i e^(x_i - m), weighted = sum_i e^(x_i - m) * (x_i - m).
class SoftmaxLanes {
 public:
  explicit SoftmaxLanes(std::size_t vocab) : skip_margin_(SkipMargin(vocab)) {}

  template <typename L>
  [[gnu::always_inline]] void AddBlock(std::span<const float> block, float block_max) {
    if (!(block_max > kNegInfinity) || std::isinf(block_max)) return;
    if (block_max > max_) Rescale(block_max);
    if (block_max - max_ < -skip_margin_) return;
    AccumulateLanes<L>(block);
  }

  double LogSumExp() const { return max_ + std::log(Fold(sum_)); }

  // H = log(sum) - weighted / sum, clamped at 0 against rounding.
  double Entropy() const {
    const double sum = Fold(sum_);
    return std::max(0.0, std::log(sum) - Fold(weighted_) / sum);
  }

 private:
  void Rescale(float new_max) {
    if (max_ > kNegInfinity) {
      const double shift = static_cast<double>(new_max) - max_;
      const double scale = std::exp(-shift);
      for (std::size_t lane = 0; lane < kSumLanes; ++lane) {
        weighted_[lane] = scale * (weighted_[lane] - shift * sum_[lane]);
        sum_[lane] *= scale;
      }
    }
    max_ = new_max;
  }

  static double Fold(const double (&lanes)[kSumLanes]) {
    double folded[kSumLanes];
    std::copy(std::begin(lanes), std::end(lanes), folded);
    for (std::size_t half = kSumLanes / 2; half > 0; half /= 2) {
      for (std::size_t i = 0; i < half; ++i) folded[i] += folded[i + half];
    }
    return folded[0];
  }

  // The block's elements into the double lanes, kept in registers for the
  // block. A last group of fewer than kSumLanes elements is padded with -inf,
  // whose lanes add +0: no change, as a lane that starts at +0 never holds -0.
  template <typename L>
  [[gnu::always_inline]] void AccumulateLanes(std::span<const float> block) {
    using Half = typename HalfLanes<L::kCount>::Double;
    constexpr std::size_t kHalves = 2 * kSumLanes / L::kCount;
    Half sum[kHalves], weighted[kHalves];
    static_assert(sizeof(sum) == sizeof(sum_));
    std::memcpy(&sum, sum_, sizeof(sum));
    std::memcpy(&weighted, weighted_, sizeof(weighted));
    std::size_t i = 0;
    for (; i + kSumLanes <= block.size(); i += kSumLanes) {
      AddGroup<L>(&block[i], sum, weighted);
    }
    if (i < block.size()) {
      float padded[kSumLanes];
      std::fill(std::begin(padded), std::end(padded), kNegInfinity);
      std::copy(block.begin() + i, block.end(), padded);
      AddGroup<L>(padded, sum, weighted);
    }
    std::memcpy(sum_, &sum, sizeof(sum));
    std::memcpy(weighted_, &weighted, sizeof(weighted));
  }

  // Elements x[0..kSumLanes) into lanes 0..kSumLanes; acc[h] holds lanes
  // [h * kCount / 2, (h + 1) * kCount / 2), one register each.
  template <typename L>
  [[gnu::always_inline]] void AddGroup(const float* x, typename HalfLanes<L::kCount>::Double* sum,
                                       typename HalfLanes<L::kCount>::Double* weighted) const {
#pragma GCC unroll 4  // keeps the accumulators in registers
    for (std::size_t v = 0; v < kSumLanes / L::kCount; ++v) {
      const auto [e, w] = Terms<L>(Load<typename L::Float>(x + v * L::kCount));
      AddWidened<L>(e, &sum[2 * v]);
      AddWidened<L>(w, &weighted[2 * v]);
    }
  }

  // acc[0] += low half of x, acc[1] += high half, widened to double.
  template <typename L>
  [[gnu::always_inline]] static void AddWidened(typename L::Float x,
                                                typename HalfLanes<L::kCount>::Double* acc) {
    const auto wide = Split<typename HalfLanes<L::kCount>::Double>(
        __builtin_convertvector(x, typename L::Double));
    acc[0] += wide.piece[0];
    acc[1] += wide.piece[1];
  }

  // e^t and e^t * t lane by lane, for t = x - max_ (both 0 below the
  // exponential's cutoff).
  template <typename L>
  [[gnu::always_inline]] std::pair<typename L::Float, typename L::Float> Terms(
      typename L::Float x) const {
    using Float = typename L::Float;
    using Uint = typename L::Uint;
    const Float t = x - max_;
    const Float e = ExpNonPositiveV2Lanes<Float, Uint>(t);
    const Uint kept = reinterpret_cast<Uint>(t >= kExpCutoff);
    return {e, e * reinterpret_cast<Float>(reinterpret_cast<Uint>(t) & kept)};
  }

  const float skip_margin_;
  float max_ = kNegInfinity;
  double sum_[kSumLanes] = {};
  double weighted_[kSumLanes] = {};
};

template <typename L>
[[gnu::always_inline]] inline RowPass RunPassV2(std::span<const float> row,
                                                std::span<TokenLogit> top) {
  SoftmaxLanes softmax(row.size());
  return RunBlocks<L, kBlockSizeV2>(row, top, softmax);
}

RowPass RunBaselinePassV2(std::span<const float> row, std::span<TokenLogit> top) {
  return RunPassV2<Lanes<4>>(row, top);
}

#if ORCH_DIGEST_X86_VARIANTS
// Neither target enables FMA, and the library is built with -ffp-contract=off.
[[gnu::target("avx2")]] RowPass RunAvx2PassV2(std::span<const float> row,
                                              std::span<TokenLogit> top) {
  return RunPassV2<Lanes<8>>(row, top);
}

[[gnu::target("avx512f")]] RowPass RunAvx512PassV2(std::span<const float> row,
                                                   std::span<TokenLogit> top) {
  return RunPassV2<Lanes<16>>(row, top);
}
#endif

}  // namespace

RowPass RunRowPassV2(VectorIsa isa, std::span<const float> row, std::span<TokenLogit> top) {
#if ORCH_DIGEST_X86_VARIANTS
  if (isa == VectorIsa::kAvx512) return RunAvx512PassV2(row, top);
  if (isa == VectorIsa::kAvx2) return RunAvx2PassV2(row, top);
#endif
  (void)isa;
  return RunBaselinePassV2(row, top);
}

}  // namespace orch::digest::internal
