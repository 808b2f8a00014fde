#include "digest/row_digest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation
#include <xxhash.h>

#include "digest/fast_exp.h"

namespace orch::digest {
namespace {

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
  void OfferBlock(std::span<const float> block, std::int32_t first_id,
                  float block_max) {
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
  double Entropy() const {
    return std::max(0.0, std::log(sum_) - weighted_ / sum_);
  }

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
      const Float4 w =
          e * reinterpret_cast<Float4>(reinterpret_cast<Uint4>(t) & kept);
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

RowHash HashRow(std::span<const float> row) {
  const XXH128_hash_t hash = XXH3_128bits(row.data(), row.size_bytes());
  return {hash.low64, hash.high64};
}

std::string RowHashHex(const RowHash& hash) {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx",
                static_cast<unsigned long long>(hash.high),
                static_cast<unsigned long long>(hash.low));
  return text;
}

Status ValidateDigestRequest(std::size_t vocab_size,
                             const DigestOptions& options) {
  if (vocab_size == 0) return InvalidArgument("digest: empty logit row");
  if (vocab_size >
      static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    return InvalidArgument("digest: row of " + std::to_string(vocab_size) +
                           " logits exceeds the int32 token id range");
  }
  if (options.top_k == 0 || options.top_k > kMaxTopK) {
    return InvalidArgument("digest: top_k " + std::to_string(options.top_k) +
                           " outside 1.." + std::to_string(kMaxTopK));
  }
  const bool target_ok =
      options.target_id == kNoTarget ||
      (options.target_id >= 0 &&
       static_cast<std::size_t>(options.target_id) < vocab_size);
  if (!target_ok) {
    return InvalidArgument(
        "digest: target token " + std::to_string(options.target_id) +
        " outside a vocabulary of " + std::to_string(vocab_size));
  }
  return Status::Ok();
}

std::size_t TopCapacityNeeded(std::size_t vocab_size,
                              const DigestOptions& options) {
  return std::min<std::size_t>(options.top_k, vocab_size);
}

Status DigestRowInto(std::span<const float> row, const DigestOptions& options,
                     std::span<TokenLogit> top, RowSummary* summary) {
  ORCH_RETURN_IF_ERROR(ValidateDigestRequest(row.size(), options));
  const std::size_t k = TopCapacityNeeded(row.size(), options);
  if (top.size() < k) {
    return InvalidArgument("digest: top buffer holds " +
                           std::to_string(top.size()) + " entries, needs " +
                           std::to_string(k));
  }
  XXH3_state_t hash_state;
  XXH3_128bits_reset(&hash_state);
  TopK top_k(top.first(k));
  SoftmaxAccumulator softmax;
  bool has_nan = false;
  for (std::size_t begin = 0; begin < row.size(); begin += kBlockSize) {
    const auto block =
        row.subspan(begin, std::min(kBlockSize, row.size() - begin));
    XXH3_128bits_update(&hash_state, block.data(), block.size_bytes());
    const BlockScan scan = ScanBlock(block);
    has_nan |= scan.has_nan;
    top_k.OfferBlock(block, static_cast<std::int32_t>(begin), scan.max);
    softmax.AddBlock(block, scan.max);
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(&hash_state);
  const auto kept = top.first(top_k.size());
  RowSummary s;
  s.vocab_size = static_cast<std::uint32_t>(row.size());
  s.flags = FlagsFor(has_nan, kept);
  s.argmax = kept.empty() ? -1 : kept[0].id;
  s.top_count = static_cast<std::uint32_t>(kept.size());
  s.logsumexp = s.flags == 0 ? softmax.LogSumExp() : kNan;
  s.entropy = s.flags == 0 ? softmax.Entropy() : kNan;
  s.hash = {hash.low64, hash.high64};
  s.target_id = options.target_id;
  s.target_logit =
      options.target_id == kNoTarget ? 0.0f : row[options.target_id];
  *summary = s;
  return Status::Ok();
}

Status ComputeRowDigest(std::span<const float> row,
                        const DigestOptions& options, RowDigest* out) {
  ORCH_RETURN_IF_ERROR(ValidateDigestRequest(row.size(), options));
  out->top.resize(TopCapacityNeeded(row.size(), options));
  RowSummary summary;
  ORCH_RETURN_IF_ERROR(DigestRowInto(row, options, out->top, &summary));
  out->top.resize(summary.top_count);
  out->vocab_size = summary.vocab_size;
  out->flags = summary.flags;
  out->argmax = summary.argmax;
  out->logsumexp = summary.logsumexp;
  out->entropy = summary.entropy;
  out->hash = summary.hash;
  out->target_id = summary.target_id;
  out->target_logit = summary.target_logit;
  return Status::Ok();
}

}  // namespace orch::digest
