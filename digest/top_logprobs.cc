#include "digest/top_logprobs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <xxhash.h>

namespace orch::digest {
namespace {

constexpr double kNanValue = std::numeric_limits<double>::quiet_NaN();

// Value descending, ties by lower id; NaN values after every number, by id.
bool Before(const TokenLogit& a, const TokenLogit& b) {
  const bool a_nan = std::isnan(a.logit);
  const bool b_nan = std::isnan(b.logit);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

Status CheckDistinctIds(std::span<TokenLogit> pairs) {
  std::sort(pairs.begin(), pairs.end(),
            [](const TokenLogit& a, const TokenLogit& b) { return a.id < b.id; });
  const auto repeated =
      std::adjacent_find(pairs.begin(), pairs.end(),
                         [](const TokenLogit& a, const TokenLogit& b) { return a.id == b.id; });
  if (repeated != pairs.end()) {
    return InvalidArgument("top logprobs: token id " + std::to_string(repeated->id) +
                           " returned twice");
  }
  return Status::Ok();
}

std::uint32_t FlagsOf(std::span<const TokenLogit> sorted, std::uint32_t extra_flags) {
  std::uint32_t flags = kRowTopKOnly | extra_flags;
  if (std::isnan(sorted.back().logit)) flags |= kRowHasNan;  // NaN values sort last
  const float best = sorted.front().logit;
  if (std::isnan(best) || best == -std::numeric_limits<float>::infinity()) {
    flags |= kRowNoFiniteLogit;
  }
  if (std::isinf(best) && best > 0) flags |= kRowHasPosInf;
  return flags;
}

// XXH3-128 of the pairs as (int32 id, float32 bits), little-endian, in order.
RowHash HashPairs(std::span<const TokenLogit> sorted) {
  std::array<unsigned char, 8 * kMaxTopK> bytes;
  std::size_t at = 0;
  for (const TokenLogit& t : sorted) {
    std::uint32_t words[2];
    std::memcpy(&words[0], &t.id, 4);
    std::memcpy(&words[1], &t.logit, 4);
    for (const std::uint32_t w : words) {
      for (int shift = 0; shift < 32; shift += 8)
        bytes[at++] = static_cast<unsigned char>(w >> shift);
    }
  }
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), at);
  return {hash.low64, hash.high64};
}

bool ValidId(std::int64_t id, std::uint64_t vocab_size) {
  return id >= 0 && (vocab_size == 0 || static_cast<std::uint64_t>(id) < vocab_size);
}

}  // namespace

Status ValidateTopLogprobsRequest(const TopLogprobsRequest& r) {
  const std::size_t k = r.ids.size();
  if (k == 0 || k > kMaxTopK) {
    return InvalidArgument("top logprobs: k " + std::to_string(k) + " outside 1.." +
                           std::to_string(kMaxTopK));
  }
  if (r.logprobs.size() != k) {
    return InvalidArgument("top logprobs: " + std::to_string(k) + " ids but " +
                           std::to_string(r.logprobs.size()) + " log-probabilities");
  }
  if (r.vocab_size > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    return InvalidArgument("top logprobs: vocabulary of " + std::to_string(r.vocab_size) +
                           " exceeds the int32 token id range");
  }
  for (const std::int32_t id : r.ids) {
    if (!ValidId(id, r.vocab_size)) {
      return InvalidArgument("top logprobs: token id " + std::to_string(id) +
                             " outside a vocabulary of " + std::to_string(r.vocab_size));
    }
  }
  if (r.target_id != kNoTarget && !ValidId(r.target_id, r.vocab_size)) {
    return InvalidArgument("top logprobs: target token " + std::to_string(r.target_id) +
                           " outside a vocabulary of " + std::to_string(r.vocab_size));
  }
  if ((r.extra_flags & ~std::uint32_t{kRowProcessed}) != 0) {
    return InvalidArgument("top logprobs: extra flags " + std::to_string(r.extra_flags) +
                           " (only ROW_PROCESSED = " + std::to_string(kRowProcessed) +
                           " may be added)");
  }
  if (r.version != DigestVersion::kV1 && r.version != DigestVersion::kV2) {
    return InvalidArgument("top logprobs: unknown digest version " +
                           std::to_string(static_cast<unsigned>(r.version)));
  }
  return Status::Ok();
}

Status DigestTopLogprobsInto(const TopLogprobsRequest& r, std::span<TokenLogit> top,
                             RowSummary* summary) {
  ORCH_RETURN_IF_ERROR(ValidateTopLogprobsRequest(r));
  const std::size_t k = r.ids.size();
  if (top.size() < k) {
    return InvalidArgument("top logprobs: top buffer holds " + std::to_string(top.size()) +
                           " entries, needs " + std::to_string(k));
  }
  const std::span<TokenLogit> pairs = top.first(k);
  for (std::size_t i = 0; i < k; ++i) pairs[i] = TokenLogit{r.ids[i], r.logprobs[i]};
  ORCH_RETURN_IF_ERROR(CheckDistinctIds(pairs));
  std::sort(pairs.begin(), pairs.end(), Before);
  RowSummary s;
  s.version = r.version;
  s.vocab_size = static_cast<std::uint32_t>(r.vocab_size);
  s.flags = FlagsOf(pairs, r.extra_flags);
  s.argmax = std::isnan(pairs[0].logit) ? -1 : pairs[0].id;
  s.top_count = static_cast<std::uint32_t>(k);
  s.logsumexp = (s.flags & kRowNotDistributionFlags) == 0 ? 0.0 : kNanValue;
  s.entropy = kNanValue;
  s.hash = HashPairs(pairs);
  s.target_id = r.target_id;
  s.target_logit = r.target_id == kNoTarget ? 0.0f : r.target_logprob;
  if (r.target_id != kNoTarget && std::isnan(s.target_logit)) {
    for (const TokenLogit& t : pairs) {
      if (t.id == r.target_id) s.target_logit = t.logit;
    }
  }
  *summary = s;
  return Status::Ok();
}

Status DigestTopLogprobs(const TopLogprobsRequest& request, RowDigest* out) {
  std::vector<TokenLogit> top(request.ids.size());
  RowSummary s;
  ORCH_RETURN_IF_ERROR(DigestTopLogprobsInto(request, top, &s));
  out->version = s.version;
  out->vocab_size = s.vocab_size;
  out->flags = s.flags;
  out->argmax = s.argmax;
  out->logsumexp = s.logsumexp;
  out->entropy = s.entropy;
  out->hash = s.hash;
  out->target_id = s.target_id;
  out->target_logit = s.target_logit;
  out->top = std::move(top);
  return Status::Ok();
}

}  // namespace orch::digest
