// Vector building blocks shared by the row passes of every digest version
// (row_pass.cc: v1, row_pass_v2.cc: v2): float vectors of 4, 8 and 16 lanes,
// the NaN-aware block maximum, and the exact top-k list. Internal to the digest
// library; everything here is always inlined into the per-ISA pass functions,
// so it compiles for the instruction set of the function that uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "digest/fast_exp.h"
#include "digest/row_digest.h"
#include "digest/row_pass.h"
#include "digest/xxh3_isa.h"

// Vectors wider than SSE pass by value differently with and without AVX; the
// helpers below that take them are internal and always inlined. (Not popped:
// GCC reports it where a template is instantiated, in the including file.)
#pragma GCC diagnostic ignored "-Wpsabi"

// Whether the AVX2 and AVX-512 variants are compiled (x86-64 with GCC or Clang
// target attributes); elsewhere only the baseline runs.
#if defined(__x86_64__) && defined(__GNUC__)
#define ORCH_DIGEST_X86_VARIANTS 1
#else
#define ORCH_DIGEST_X86_VARIANTS 0
#endif

namespace orch::digest::internal {

inline constexpr float kNegInfinity = -std::numeric_limits<float>::infinity();

// A vector of N floats with its integer twins (GCC/Clang vector extension;
// spelled out per width, as the extension takes no dependent sizes).
template <std::size_t N>
struct Lanes;

template <>
struct Lanes<4> {
  static constexpr std::size_t kCount = 4;
  using Float = Float4;
  using Int = Int4;
  using Uint = Uint4;
  using Double = double __attribute__((vector_size(32)));
};

template <>
struct Lanes<8> {
  static constexpr std::size_t kCount = 8;
  using Float = float __attribute__((vector_size(32)));
  using Int = std::int32_t __attribute__((vector_size(32)));
  using Uint = std::uint32_t __attribute__((vector_size(32)));
  using Double = double __attribute__((vector_size(64)));
};

template <>
struct Lanes<16> {
  static constexpr std::size_t kCount = 16;
  using Float = float __attribute__((vector_size(64)));
  using Int = std::int32_t __attribute__((vector_size(64)));
  using Uint = std::uint32_t __attribute__((vector_size(64)));
  using Double = double __attribute__((vector_size(128)));
};

// The XXH3 variant (xxh3_isa.h) whose vector code matches a pass of N floats
// per instruction.
template <std::size_t N>
struct Xxh3For;

template <>
struct Xxh3For<4> {
  static constexpr auto kReset = Xxh3ResetBaseline;
  static constexpr auto kUpdate = Xxh3UpdateBaseline;
  static constexpr auto kDigest = Xxh3DigestBaseline;
};

#if ORCH_DIGEST_X86_VARIANTS
template <>
struct Xxh3For<8> {
  static constexpr auto kReset = Xxh3ResetAvx2;
  static constexpr auto kUpdate = Xxh3UpdateAvx2;
  static constexpr auto kDigest = Xxh3DigestAvx2;
};

template <>
struct Xxh3For<16> {
  static constexpr auto kReset = Xxh3ResetAvx512;
  static constexpr auto kUpdate = Xxh3UpdateAvx512;
  static constexpr auto kDigest = Xxh3DigestAvx512;
};
#else
template <>
struct Xxh3For<8> : Xxh3For<4> {};
template <>
struct Xxh3For<16> : Xxh3For<4> {};
#endif

// The row hash (XXH3-128 of the row's bytes) fed block by block, with the
// xxhash vector code of the pass's width: the same hash from every variant.
template <std::size_t N>
class BlockHash {
 public:
  BlockHash() { Xxh3For<N>::kReset(&state_); }
  void Update(std::span<const float> block) {
    Xxh3For<N>::kUpdate(&state_, block.data(), block.size_bytes());
  }
  RowHash Finish() const {
    const Xxh3Hash hash = Xxh3For<N>::kDigest(&state_);
    return {hash.low, hash.high};
  }

 private:
  Xxh3State state_;
};

template <typename V>
[[gnu::always_inline]] inline V Load(const float* from) {
  V v;
  std::memcpy(&v, from, sizeof(v));
  return v;
}

// The 4-lane pieces of a vector, lowest lanes first.
template <typename Piece, typename V>
struct Pieces {
  static constexpr std::size_t kCount = sizeof(V) / sizeof(Piece);
  Piece piece[kCount];
};

template <typename Piece, typename V>
[[gnu::always_inline]] inline Pieces<Piece, V> Split(V v) {
  Pieces<Piece, V> pieces;
  std::memcpy(&pieces, &v, sizeof(v));
  return pieces;
}

// Largest non-NaN value of a block (-inf when none) and whether it holds a NaN.
struct BlockScan {
  float max = kNegInfinity;
  bool has_nan = false;
};

// The maximum ignores NaN, and equal non-NaN floats differ only in the sign of
// zero, which no output depends on (x - (+0) and x - (-0) give the same
// exponential, and a maximum of +-0 ranks and rescales alike), so the lane
// count of the scan does not show in the digest.
template <typename L>
[[gnu::always_inline]] inline BlockScan ScanBlock(std::span<const float> block) {
  using Float = typename L::Float;
  Float max = Float{} + kNegInfinity;
  typename L::Int nan = {};
  std::size_t i = 0;
  for (; i + L::kCount <= block.size(); i += L::kCount) {
    const Float x = Load<Float>(&block[i]);
    max = x > max ? x : max;  // NaN lanes keep the old maximum
    nan |= x != x;
  }
  BlockScan scan;
  for (std::size_t lane = 0; lane < L::kCount; ++lane) {
    scan.max = max[lane] > scan.max ? max[lane] : scan.max;
    scan.has_nan |= nan[lane] != 0;
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

  // Offers every element of a block whose ids start at `first_id`. Vectors
  // with no element above a full list's threshold are skipped, which only
  // saves Offer calls that would reject: the threshold never falls.
  template <typename L>
  [[gnu::always_inline]] void OfferBlock(std::span<const float> block, std::int32_t first_id,
                                         float block_max) {
    if (Full() && !(block_max > buffer_.back().logit)) return;
    constexpr std::size_t kGroup = 4 * L::kCount;
    const std::size_t vectors_end = block.size() - block.size() % L::kCount;
    std::size_t i = 0;
    for (; i + kGroup <= vectors_end; i += kGroup) {
      if (Full() && !AnyAbove<L>(GroupMax<L>(&block[i]), buffer_.back().logit)) continue;
      OfferVectors<L>(block, first_id, i, i + kGroup);
    }
    OfferVectors<L>(block, first_id, i, vectors_end);
    for (i = vectors_end; i < block.size(); ++i) Offer(Id(first_id, i), block[i]);
  }

 private:
  bool Full() const { return size_ == buffer_.size(); }

  static std::int32_t Id(std::int32_t first_id, std::size_t offset) {
    return first_id + static_cast<std::int32_t>(offset);
  }

  // Offers the vectors of block[begin, end), each only if one of its floats
  // exceeds a full list's threshold.
  template <typename L>
  [[gnu::always_inline]] void OfferVectors(std::span<const float> block, std::int32_t first_id,
                                           std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; i += L::kCount) {
      if (Full() && !AnyAbove<L>(Load<typename L::Float>(&block[i]), buffer_.back().logit)) {
        continue;
      }
      OfferAbove<L::kCount>(&block[i], Id(first_id, i));
    }
  }

  // Offers those of the N floats at `x` (ids from `first_id`) above a full
  // list's threshold, found without a branch per float: in a vector that has
  // one, the others would each mispredict.
  template <std::size_t N>
  [[gnu::always_inline]] void OfferAbove(const float* x, std::int32_t first_id) {
    if (!Full()) {
      for (std::size_t j = 0; j < N; ++j) Offer(Id(first_id, j), x[j]);
      return;
    }
    const float threshold = buffer_.back().logit;
    std::uint8_t above[N];
    std::size_t count = 0;
    for (std::size_t j = 0; j < N; ++j) {
      above[count] = static_cast<std::uint8_t>(j);
      count += static_cast<std::size_t>(x[j] > threshold);
    }
    for (std::size_t c = 0; c < count; ++c) Offer(Id(first_id, above[c]), x[above[c]]);
  }

  // Lane by lane maximum of the four vectors at `x`, ignoring NaN (-inf for a
  // lane with no number): one test then rules out 4 * L::kCount floats.
  template <typename L>
  [[gnu::always_inline]] static typename L::Float GroupMax(const float* x) {
    using Float = typename L::Float;
    Float max = Float{} + kNegInfinity;
    for (std::size_t v = 0; v < 4; ++v) {
      const Float next = Load<Float>(x + v * L::kCount);
      max = next > max ? next : max;  // NaN lanes keep the old maximum
    }
    return max;
  }

  // Whether one of the lanes of `x` exceeds `threshold` (NaN does not).
  template <typename L>
  [[gnu::always_inline]] static bool AnyAbove(typename L::Float x, float threshold) {
    const auto above = Split<Int4>(x > threshold);
    Int4 any = above.piece[0];
    for (std::size_t p = 1; p < above.kCount; ++p) any |= above.piece[p];
    return (any[0] | any[1] | any[2] | any[3]) != 0;
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

// The pass of every digest version over a row, `kBlock` logits at a time
// (part of each version's definition: its sums are rescaled, or skipped, per
// block): the hash, the NaN scan, the top-k and the version's softmax sums,
// `softmax.AddBlock<L>(block, block_max)` then LogSumExp() and Entropy().
template <typename L, std::size_t kBlock, typename Softmax>
[[gnu::always_inline]] inline RowPass RunBlocks(std::span<const float> row,
                                                std::span<TokenLogit> top, Softmax& softmax) {
  BlockHash<L::kCount> hash;
  TopK top_k(top);
  RowPass pass;
  for (std::size_t begin = 0; begin < row.size(); begin += kBlock) {
    const auto block = row.subspan(begin, std::min(kBlock, row.size() - begin));
    hash.Update(block);
    const BlockScan scan = ScanBlock<L>(block);
    pass.has_nan |= scan.has_nan;
    top_k.OfferBlock<L>(block, static_cast<std::int32_t>(begin), scan.max);
    softmax.template AddBlock<L>(block, scan.max);
  }
  pass.hash = hash.Finish();
  pass.top_count = top_k.size();
  pass.logsumexp = softmax.LogSumExp();
  pass.entropy = softmax.Entropy();
  return pass;
}

}  // namespace orch::digest::internal
