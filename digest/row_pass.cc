#include "digest/row_pass.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "digest/fast_exp.h"
#include "digest/row_pass_parts.h"

// Vectors wider than SSE pass by value differently with and without AVX; the
// helpers below that take them are internal and always inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace orch::digest::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the row hash is defined over little-endian float bytes");

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// 8 KiB of floats: a block stays in L1 while it is hashed, scanned and
// exponentiated.
constexpr std::size_t kBlockSize = 2048;

// Four doubles: the running sums' lanes.
using Double4 = double __attribute__((vector_size(32)));

// Online softmax statistics relative to the running maximum m:
// sum = sum_i e^(x_i - m), weighted = sum_i e^(x_i - m) * (x_i - m).
// Rescaled once per block when the maximum grows, so each logit costs one exp.
class SoftmaxAccumulator {
 public:
  template <typename L>
  [[gnu::always_inline]] void AddBlock(std::span<const float> block, float block_max) {
    if (!(block_max > kNegInf) || std::isinf(block_max)) return;
    if (block_max > max_) Rescale(block_max);
    AccumulateLanes<L>(block);
  }

  double LogSumExp() const { return max_ + std::log(sum_); }

  // H = -sum p_i log p_i = log(sum) - weighted / sum, clamped at 0 against
  // rounding.
  double Entropy() const { return std::max(0.0, std::log(sum_) - weighted_ / sum_); }

 private:
  void Rescale(float new_max) {
    if (max_ > kNegInf) {
      const double shift = static_cast<double>(new_max) - max_;
      const double scale = std::exp(-shift);
      weighted_ = scale * (weighted_ - shift * sum_);
      sum_ *= scale;
    }
    max_ = new_max;
  }

  // Adds e^t and e^t * t for t = x - max_ into four double lanes: element j of
  // the block goes to lane j % 4 in increasing j (the last size % 4 elements go
  // to lane 0), and the lanes are summed pairwise at the end. That order is
  // part of the digest's definition; a wide vector keeps it by adding its
  // 4-lane pieces in turn. Elements below kExpCutoff add 0.
  template <typename L>
  [[gnu::always_inline]] void AccumulateLanes(std::span<const float> block) {
    Double4 sum4 = {}, weighted4 = {};
    std::size_t i = 0;
    for (; i + L::kCount <= block.size(); i += L::kCount) {
      AccumulateVector<L>(&block[i], &sum4, &weighted4);
    }
    for (; i + 4 <= block.size(); i += 4) {
      AccumulateVector<Lanes<4>>(&block[i], &sum4, &weighted4);
    }
    for (; i < block.size(); ++i) {
      const float t = block[i] - max_;
      const float e = ExpNonPositive(t);
      sum4[0] += e;
      weighted4[0] += t >= kExpCutoff ? e * t : 0.0f;
    }
    sum_ += (sum4[0] + sum4[1]) + (sum4[2] + sum4[3]);
    weighted_ += (weighted4[0] + weighted4[1]) + (weighted4[2] + weighted4[3]);
  }

  template <typename L>
  [[gnu::always_inline]] void AccumulateVector(const float* x, Double4* sum4,
                                               Double4* weighted4) const {
    using Float = typename L::Float;
    using Uint = typename L::Uint;
    const Float t = Load<Float>(x) - max_;
    const Float e = ExpNonPositiveLanes<Float, Uint>(t);
    const Uint kept = reinterpret_cast<Uint>(t >= kExpCutoff);
    const Float w = e * reinterpret_cast<Float>(reinterpret_cast<Uint>(t) & kept);
    AddPieces(__builtin_convertvector(e, typename L::Double), sum4,
              std::make_index_sequence<L::kCount / 4>());
    AddPieces(__builtin_convertvector(w, typename L::Double), weighted4,
              std::make_index_sequence<L::kCount / 4>());
  }

  // *acc += lanes 0-3 of v, then lanes 4-7, and so on.
  template <typename D, std::size_t... kPiece>
  [[gnu::always_inline]] static void AddPieces(D v, Double4* acc, std::index_sequence<kPiece...>) {
    ((*acc +=
      __builtin_shufflevector(v, v, 4 * kPiece, 4 * kPiece + 1, 4 * kPiece + 2, 4 * kPiece + 3)),
     ...);
  }

  float max_ = kNegInf;
  double sum_ = 0.0;
  double weighted_ = 0.0;
};

template <typename L>
[[gnu::always_inline]] inline RowPass RunPass(std::span<const float> row,
                                              std::span<TokenLogit> top) {
  SoftmaxAccumulator softmax;
  return RunBlocks<L, kBlockSize>(row, top, softmax);
}

RowPass RunBaselinePass(std::span<const float> row, std::span<TokenLogit> top) {
  return RunPass<Lanes<4>>(row, top);
}

#if ORCH_DIGEST_X86_VARIANTS
// Same source, compiled for wider registers. Neither target enables FMA, and
// the library is built with -ffp-contract=off besides.
[[gnu::target("avx2")]] RowPass RunAvx2Pass(std::span<const float> row, std::span<TokenLogit> top) {
  return RunPass<Lanes<8>>(row, top);
}

[[gnu::target("avx512f")]] RowPass RunAvx512Pass(std::span<const float> row,
                                                 std::span<TokenLogit> top) {
  return RunPass<Lanes<16>>(row, top);
}
#endif

}  // namespace

bool VectorIsaAvailable(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kBaseline:
      return true;
#if ORCH_DIGEST_X86_VARIANTS
    case VectorIsa::kAvx2:
      return __builtin_cpu_supports("avx2");
    case VectorIsa::kAvx512:
      return __builtin_cpu_supports("avx512f");
#else
    case VectorIsa::kAvx2:
    case VectorIsa::kAvx512:
      return false;
#endif
  }
  return false;
}

VectorIsa BestVectorIsa() {
  for (const VectorIsa isa : {VectorIsa::kAvx512, VectorIsa::kAvx2}) {
    if (VectorIsaAvailable(isa)) return isa;
  }
  return VectorIsa::kBaseline;
}

RowPass RunRowPass(VectorIsa isa, std::span<const float> row, std::span<TokenLogit> top) {
#if ORCH_DIGEST_X86_VARIANTS
  if (isa == VectorIsa::kAvx512) return RunAvx512Pass(row, top);
  if (isa == VectorIsa::kAvx2) return RunAvx2Pass(row, top);
#endif
  (void)isa;
  return RunBaselinePass(row, top);
}

}  // namespace orch::digest::internal
