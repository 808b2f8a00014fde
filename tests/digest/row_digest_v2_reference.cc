#include "tests/digest/row_digest_v2_reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <xxhash.h>

namespace orch::digest::testing {
namespace {

constexpr float kReferenceInf = std::numeric_limits<float>::infinity();
constexpr std::size_t kBlock = 2048;
constexpr std::size_t kLanes = 16;

// e^t, v2's exponential, one float operation at a time.
float Exp(float t) {
  if (!(t >= -80.0f)) return 0.0f;
  const float shifted = t * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (t - n * 0.693359375f) - n * -2.12194440e-4f;
  const float r2 = r * r;
  float s = r * 1.381461283e-3f + 8.368709858e-3f;
  s = s * r + 4.166838737e-2f;
  s = s * r + 1.666652069e-1f;
  s = s * r + 4.999999345e-1f;
  const float p = s * r2 + r + 1.0f;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(p) +
                              (std::bit_cast<std::uint32_t>(shifted) << 23));
}

double Fold(std::vector<double> lanes) {
  for (std::size_t half = kLanes / 2; half > 0; half /= 2) {
    for (std::size_t i = 0; i < half; ++i) lanes[i] += lanes[i + half];
  }
  return lanes[0];
}

struct Sums {
  float max = -kReferenceInf;
  std::vector<double> sum = std::vector<double>(kLanes, 0.0);
  std::vector<double> weighted = std::vector<double>(kLanes, 0.0);
};

void AddBlock(std::span<const float> block, float margin, Sums* s) {
  float block_max = -kReferenceInf;
  for (const float x : block) block_max = x > block_max ? x : block_max;
  if (!(block_max > -kReferenceInf) || std::isinf(block_max)) return;
  if (block_max > s->max) {
    if (s->max > -kReferenceInf) {
      const double shift = static_cast<double>(block_max) - s->max;
      const double scale = std::exp(-shift);
      for (std::size_t l = 0; l < kLanes; ++l) {
        s->weighted[l] = scale * (s->weighted[l] - shift * s->sum[l]);
        s->sum[l] *= scale;
      }
    }
    s->max = block_max;
  }
  if (block_max - s->max < -margin) return;
  for (std::size_t j = 0; j < block.size(); ++j) {
    const float t = block[j] - s->max;
    const float e = Exp(t);
    s->sum[j % kLanes] += static_cast<double>(e);
    s->weighted[j % kLanes] += static_cast<double>(e * (t >= -80.0f ? t : 0.0f));
  }
}

}  // namespace

RowDigest ReferenceRowDigestV2(std::span<const float> row, const DigestOptions& options) {
  RowDigest d;
  d.version = DigestVersion::kV2;
  d.vocab_size = static_cast<std::uint32_t>(row.size());
  const XXH128_hash_t hash = XXH3_128bits(row.data(), row.size_bytes());
  d.hash = {hash.low64, hash.high64};
  bool has_nan = false;
  std::vector<TokenLogit> ranked;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (std::isnan(row[i])) {
      has_nan = true;
    } else {
      ranked.push_back({static_cast<std::int32_t>(i), row[i]});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const TokenLogit& a, const TokenLogit& b) { return a.logit > b.logit; });
  ranked.resize(std::min<std::size_t>(ranked.size(), options.top_k));
  d.top = ranked;
  d.argmax = d.top.empty() ? -1 : d.top[0].id;
  d.flags = has_nan ? kRowHasNan : 0u;
  if (d.top.empty() || d.top[0].logit == -kReferenceInf) d.flags |= kRowNoFiniteLogit;
  if (!d.top.empty() && d.top[0].logit == kReferenceInf) d.flags |= kRowHasPosInf;
  d.target_id = options.target_id;
  d.target_logit = options.target_id == kNoTarget ? 0.0f : row[options.target_id];
  const float margin = static_cast<float>(std::bit_width(row.size() - 1) + 24) * 0.693147182f;
  Sums s;
  for (std::size_t begin = 0; begin < row.size(); begin += kBlock) {
    AddBlock(row.subspan(begin, std::min(kBlock, row.size() - begin)), margin, &s);
  }
  const double sum = Fold(s.sum);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  d.logsumexp = d.flags == 0 ? s.max + std::log(sum) : nan;
  d.entropy = d.flags == 0 ? std::max(0.0, std::log(sum) - Fold(s.weighted) / sum) : nan;
  return d;
}

}  // namespace orch::digest::testing
