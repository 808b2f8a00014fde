// The released row digest, copied verbatim (fast_exp.h included) into its own
// namespace; see row_digest_reference.h. Compiled with -ffp-contract=off, like
// the library.
#include "tests/digest/row_digest_reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace orch::digest::testing {
namespace {

constexpr float kExpCutoff = -80.0f;

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
inline T ExpPolynomial(T r) {
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

inline Float4 ExpNonPositive4(Float4 t) {
  using namespace internal;
  const Uint4 keep = reinterpret_cast<Uint4>(t >= kExpCutoff);  // lanes of ~0 or 0
  const Float4 x = reinterpret_cast<Float4>(reinterpret_cast<Uint4>(t) & keep);
  const Float4 shifted = x * kLog2e + kRoundMagic;
  const Float4 n = shifted - kRoundMagic;
  const Uint4 n_bits = reinterpret_cast<Uint4>(shifted) - kRoundMagicBits;
  const Float4 p = ExpPolynomial((x - n * kLn2Hi) - n * kLn2Lo);
  const Uint4 scaled = reinterpret_cast<Uint4>(p) + (n_bits << 23);
  return reinterpret_cast<Float4>(scaled & keep);
}

static_assert(std::endian::native == std::endian::little,
              "the row hash is defined over little-endian float bytes");

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// 8 KiB of floats: a block stays in L1 while it is hashed, scanned and
// exponentiated.
constexpr std::size_t kBlockSize = 2048;

// Four doubles; used only inside functions (never passed by value, no ABI
// concern).
using Double4 = double __attribute__((vector_size(32)));

// Largest non-NaN value of a block (-inf when none) and whether it holds a NaN.
struct BlockScan {
  float max = kNegInf;
  bool has_nan = false;
};

Float4 Load4(const float* from) {
  Float4 v;
  std::memcpy(&v, from, sizeof(v));
  return v;
}

BlockScan ScanBlock(std::span<const float> block) {
  Float4 max4 = Float4{} + kNegInf;
  Int4 nan4 = {};
  std::size_t i = 0;
  for (; i + 4 <= block.size(); i += 4) {
    const Float4 x = Load4(&block[i]);
    max4 = x > max4 ? x : max4;  // NaN lanes keep the old maximum
    nan4 |= x != x;
  }
  BlockScan scan;
  for (int lane = 0; lane < 4; ++lane) {
    scan.max = max4[lane] > scan.max ? max4[lane] : scan.max;
    scan.has_nan |= nan4[lane] != 0;
  }
  for (; i < block.size(); ++i) {
    scan.max = block[i] > scan.max ? block[i] : scan.max;
    scan.has_nan |= block[i] != block[i];
  }
  return scan;
}

// The k largest offered logits, kept sorted (logit descending, earlier offer
// first on ties) in a caller-owned buffer. Offers must come in increasing id
// order.
class TopK {
 public:
  explicit TopK(std::span<TokenLogit> buffer) : buffer_(buffer) {}

  std::size_t size() const { return size_; }

  // Offers every element of a block whose ids start at `first_id`; skips the
  // block when its largest value cannot enter a full list.
  void OfferBlock(std::span<const float> block, std::int32_t first_id, float block_max) {
    if (Full() && !(block_max > buffer_.back().logit)) return;
    std::size_t i = 0;
    for (; i + 4 <= block.size(); i += 4) {
      if (Full() && !AnyAbove(Load4(&block[i]), buffer_.back().logit)) continue;
      for (std::size_t j = i; j < i + 4; ++j) Offer(Id(first_id, j), block[j]);
    }
    for (; i < block.size(); ++i) Offer(Id(first_id, i), block[i]);
  }

 private:
  bool Full() const { return size_ == buffer_.size(); }

  static std::int32_t Id(std::int32_t first_id, std::size_t offset) {
    return first_id + static_cast<std::int32_t>(offset);
  }

  static bool AnyAbove(Float4 x, float threshold) {
    const Int4 above = x > threshold;
    return (above[0] | above[1] | above[2] | above[3]) != 0;
  }

  void Offer(std::int32_t id, float logit) {
    if (logit != logit) return;  // NaN never ranks
    if (Full() && !(logit > buffer_.back().logit)) return;
    std::size_t pos = Full() ? size_ - 1 : size_++;
    while (pos > 0 && buffer_[pos - 1].logit < logit) {
      buffer_[pos] = buffer_[pos - 1];
      --pos;
    }
    buffer_[pos] = {id, logit};
  }

  std::span<TokenLogit> buffer_;
  std::size_t size_ = 0;
};

// Online softmax statistics relative to the running maximum m:
// sum = sum_i e^(x_i - m), weighted = sum_i e^(x_i - m) * (x_i - m).
// Rescaled once per block when the maximum grows, so each logit costs one exp.
class SoftmaxAccumulator {
 public:
  void AddBlock(std::span<const float> block, float block_max) {
    if (!(block_max > kNegInf) || std::isinf(block_max)) return;
    if (block_max > max_) Rescale(block_max);
    AccumulateLanes(block);
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

  // Adds e^t and e^t * t for t = x - max_, four lanes at a time in float, each
  // lane widened to double before it is summed. Lanes below kExpCutoff add 0.
  void AccumulateLanes(std::span<const float> block) {
    Double4 sum4 = {}, weighted4 = {};
    std::size_t i = 0;
    for (; i + 4 <= block.size(); i += 4) {
      const Float4 t = Load4(&block[i]) - max_;
      const Float4 e = ExpNonPositive4(t);
      const Uint4 kept = reinterpret_cast<Uint4>(t >= kExpCutoff);
      const Float4 w = e * reinterpret_cast<Float4>(reinterpret_cast<Uint4>(t) & kept);
      sum4 += __builtin_convertvector(e, Double4);
      weighted4 += __builtin_convertvector(w, Double4);
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

  float max_ = kNegInf;
  double sum_ = 0.0;
  double weighted_ = 0.0;
};

std::uint32_t FlagsFor(bool has_nan, std::span<const TokenLogit> top) {
  std::uint32_t flags = has_nan ? kRowHasNan : 0u;
  if (top.empty() || top[0].logit == kNegInf) flags |= kRowNoFiniteLogit;
  if (!top.empty() && std::isinf(top[0].logit) && top[0].logit > 0) {
    flags |= kRowHasPosInf;
  }
  return flags;
}

}  // namespace

RowDigest ReferenceRowDigest(std::span<const float> row, const DigestOptions& options) {
  const std::size_t k = std::min<std::size_t>(options.top_k, row.size());
  RowDigest out;
  out.top.resize(k);
  XXH3_state_t hash_state;
  XXH3_128bits_reset(&hash_state);
  TopK top_k(out.top);
  SoftmaxAccumulator softmax;
  bool has_nan = false;
  for (std::size_t begin = 0; begin < row.size(); begin += kBlockSize) {
    const auto block = row.subspan(begin, std::min(kBlockSize, row.size() - begin));
    XXH3_128bits_update(&hash_state, block.data(), block.size_bytes());
    const BlockScan scan = ScanBlock(block);
    has_nan |= scan.has_nan;
    top_k.OfferBlock(block, static_cast<std::int32_t>(begin), scan.max);
    softmax.AddBlock(block, scan.max);
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(&hash_state);
  out.top.resize(top_k.size());
  out.vocab_size = static_cast<std::uint32_t>(row.size());
  out.flags = FlagsFor(has_nan, out.top);
  out.argmax = out.top.empty() ? -1 : out.top[0].id;
  out.logsumexp = out.flags == 0 ? softmax.LogSumExp() : kNan;
  out.entropy = out.flags == 0 ? softmax.Entropy() : kNan;
  out.hash = {hash.low64, hash.high64};
  out.target_id = options.target_id;
  out.target_logit = options.target_id == kNoTarget ? 0.0f : row[options.target_id];
  return out;
}

}  // namespace orch::digest::testing
