#include "digest/row_digest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <xxhash.h>

#include "digest/row_pass.h"

namespace orch::digest {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::uint32_t FlagsFor(bool has_nan, std::span<const TokenLogit> top) {
  std::uint32_t flags = has_nan ? kRowHasNan : 0u;
  // `top` holds no NaN and is sorted by logit descending, so top[0], the largest
  // non-NaN logit, settles both flags; an empty `top` means every logit is NaN.
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
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(hash.high),
                static_cast<unsigned long long>(hash.low));
  return text;
}

Status ValidateDigestRequest(std::size_t vocab_size, const DigestOptions& options) {
  if (vocab_size == 0) return InvalidArgument("digest: empty logit row");
  // Token ids are int32 (TokenLogit, the C ABI).
  if (vocab_size > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    return InvalidArgument("digest: row of " + std::to_string(vocab_size) +
                           " logits exceeds the int32 token id range");
  }
  if (options.top_k == 0 || options.top_k > kMaxTopK) {
    return InvalidArgument("digest: top_k " + std::to_string(options.top_k) + " outside 1.." +
                           std::to_string(kMaxTopK));
  }
  const bool target_ok =
      options.target_id == kNoTarget ||
      (options.target_id >= 0 && static_cast<std::size_t>(options.target_id) < vocab_size);
  if (!target_ok) {
    return InvalidArgument("digest: target token " + std::to_string(options.target_id) +
                           " outside a vocabulary of " + std::to_string(vocab_size));
  }
  if (options.version != DigestVersion::kV1 && options.version != DigestVersion::kV2) {
    return InvalidArgument("digest: unknown digest version " +
                           std::to_string(static_cast<unsigned>(options.version)));
  }
  return Status::Ok();
}

std::size_t TopCapacityNeeded(std::size_t vocab_size, const DigestOptions& options) {
  return std::min<std::size_t>(options.top_k, vocab_size);
}

namespace internal {
namespace {

Status DigestRowIntoWith(VectorIsa isa, std::span<const float> row, const DigestOptions& options,
                         std::span<TokenLogit> top, RowSummary* summary) {
  // Checked here too because DigestRowInto, the non-allocating entry point,
  // comes straight here.
  ORCH_RETURN_IF_ERROR(ValidateDigestRequest(row.size(), options));
  const std::size_t k = TopCapacityNeeded(row.size(), options);
  if (top.size() < k) {
    return InvalidArgument("digest: top buffer holds " + std::to_string(top.size()) +
                           " entries, needs " + std::to_string(k));
  }
  const RowPass pass = options.version == DigestVersion::kV1 ? RunRowPass(isa, row, top.first(k))
                                                             : RunRowPassV2(isa, row, top.first(k));
  const auto kept = top.first(pass.top_count);
  RowSummary s;
  s.version = options.version;
  s.vocab_size = static_cast<std::uint32_t>(row.size());
  s.flags = FlagsFor(pass.has_nan, kept);
  s.argmax = kept.empty() ? -1 : kept[0].id;
  s.top_count = static_cast<std::uint32_t>(kept.size());
  // Softmax is undefined for a flagged row: its statistics are NaN rather than
  // whatever the pass accumulated.
  s.logsumexp = s.flags == 0 ? pass.logsumexp : kNan;
  s.entropy = s.flags == 0 ? pass.entropy : kNan;
  s.hash = pass.hash;
  s.target_id = options.target_id;
  s.target_logit = options.target_id == kNoTarget ? 0.0f : row[options.target_id];
  *summary = s;
  return Status::Ok();
}

}  // namespace

Status ComputeRowDigestWith(VectorIsa isa, std::span<const float> row, const DigestOptions& options,
                            RowDigest* out) {
  ORCH_RETURN_IF_ERROR(ValidateDigestRequest(row.size(), options));
  // Grown to the most it may need, then shrunk to what was kept: shrinking keeps
  // the capacity, so a reused digest allocates nothing on later rows.
  out->top.resize(TopCapacityNeeded(row.size(), options));
  RowSummary summary;
  ORCH_RETURN_IF_ERROR(DigestRowIntoWith(isa, row, options, out->top, &summary));
  out->top.resize(summary.top_count);
  out->version = summary.version;
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

}  // namespace internal

Status DigestRowInto(std::span<const float> row, const DigestOptions& options,
                     std::span<TokenLogit> top, RowSummary* summary) {
  return internal::DigestRowIntoWith(internal::BestVectorIsa(), row, options, top, summary);
}

Status ComputeRowDigest(std::span<const float> row, const DigestOptions& options, RowDigest* out) {
  return internal::ComputeRowDigestWith(internal::BestVectorIsa(), row, options, out);
}

}  // namespace orch::digest
