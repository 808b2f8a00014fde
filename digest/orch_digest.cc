// The C ABI (orch_digest.h) over the C++ digest library. Nothing here decides
// anything: it checks pointers, converts types and maps Status to status codes.
#include "digest/orch_digest.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "digest/kl_divergence.h"
#include "digest/row_digest.h"
#include "digest/top_logprobs.h"

namespace {

using orch::digest::TokenLogit;

static_assert(sizeof(orch_token_logit) == sizeof(TokenLogit));
static_assert(offsetof(orch_token_logit, id) == offsetof(TokenLogit, id));
static_assert(offsetof(orch_token_logit, logit) == offsetof(TokenLogit, logit));
static_assert(sizeof(orch_row_digest) == 56);
static_assert(ORCH_DIGEST_ROW_HAS_NAN == orch::digest::kRowHasNan);
static_assert(ORCH_DIGEST_ROW_HAS_POS_INF == orch::digest::kRowHasPosInf);
static_assert(ORCH_DIGEST_ROW_NO_FINITE_LOGIT == orch::digest::kRowNoFiniteLogit);
static_assert(ORCH_ROW_TOP_K_ONLY == orch::digest::kRowTopKOnly);
static_assert(ORCH_ROW_PROCESSED == orch::digest::kRowProcessed);
static_assert(ORCH_DIGEST_NO_TARGET == orch::digest::kNoTarget);
static_assert(ORCH_DIGEST_MAX_TOP_K == orch::digest::kMaxTopK);
static_assert(ORCH_DIGEST_DEFAULT_TOP_K == orch::digest::kDefaultTopK);
static_assert(ORCH_DIGEST_VERSION_1 == static_cast<unsigned>(orch::digest::DigestVersion::kV1));
static_assert(ORCH_DIGEST_VERSION_2 == static_cast<unsigned>(orch::digest::DigestVersion::kV2));
static_assert(ORCH_DIGEST_VERSION_CURRENT ==
              static_cast<unsigned>(orch::digest::kCurrentDigestVersion));

orch_digest_status ToCode(const orch::Status& status) {
  switch (status.code()) {
    case orch::StatusCode::kOk:
      return ORCH_DIGEST_OK;
    case orch::StatusCode::kInvalidArgument:
      return ORCH_DIGEST_INVALID_ARGUMENT;
    default:
      return ORCH_DIGEST_INTERNAL;
  }
}

orch_row_digest ToC(const orch::digest::RowSummary& s) {
  orch_row_digest out{};
  out.vocab_size = s.vocab_size;
  out.flags = s.flags;
  out.argmax = s.argmax;
  out.top_count = s.top_count;
  out.logsumexp = s.logsumexp;
  out.entropy = s.entropy;
  out.hash_low = s.hash.low;
  out.hash_high = s.hash.high;
  out.target_id = s.target_id;
  out.target_logit = s.target_logit;
  return out;
}

orch_digest_status DigestRow(uint32_t digest_version, const float* row, uint64_t vocab_size,
                             uint32_t top_k, int32_t target_id, orch_token_logit* top,
                             uint32_t top_capacity, orch_row_digest* out) {
  if (row == nullptr || top == nullptr || out == nullptr) return ORCH_DIGEST_NULL_POINTER;
  if (digest_version != ORCH_DIGEST_VERSION_1 && digest_version != ORCH_DIGEST_VERSION_2) {
    return ORCH_DIGEST_INVALID_ARGUMENT;
  }
  const orch::digest::DigestOptions options{
      top_k, target_id, static_cast<orch::digest::DigestVersion>(digest_version)};
  const orch::Status valid = orch::digest::ValidateDigestRequest(vocab_size, options);
  if (!valid.ok()) return ToCode(valid);
  if (top_capacity < orch::digest::TopCapacityNeeded(vocab_size, options)) {
    return ORCH_DIGEST_BUFFER_TOO_SMALL;
  }
  std::array<TokenLogit, orch::digest::kMaxTopK> best;  // 8 KiB, on the stack
  orch::digest::RowSummary summary;
  const orch::Status status =
      orch::digest::DigestRowInto(std::span<const float>(row, vocab_size), options, best, &summary);
  if (!status.ok()) return ToCode(status);
  for (std::uint32_t i = 0; i < summary.top_count; ++i) {
    top[i] = orch_token_logit{best[i].id, best[i].logit};
  }
  *out = ToC(summary);
  return ORCH_DIGEST_OK;
}

orch_digest_status DigestTop(uint32_t digest_version, const int32_t* ids, const float* logprobs,
                             uint32_t k, uint64_t vocab_size, int32_t target_id,
                             float target_logprob, uint32_t extra_flags, orch_token_logit* top,
                             uint32_t top_capacity, orch_row_digest* out) {
  if (ids == nullptr || logprobs == nullptr || top == nullptr || out == nullptr) {
    return ORCH_DIGEST_NULL_POINTER;
  }
  if (digest_version > 255) return ORCH_DIGEST_INVALID_ARGUMENT;
  const orch::digest::TopLogprobsRequest request{
      static_cast<orch::digest::DigestVersion>(digest_version),
      std::span<const int32_t>(ids, k),
      std::span<const float>(logprobs, k),
      vocab_size,
      target_id,
      target_logprob,
      extra_flags};
  const orch::Status valid = orch::digest::ValidateTopLogprobsRequest(request);
  if (!valid.ok()) return ToCode(valid);
  if (top_capacity < k) return ORCH_DIGEST_BUFFER_TOO_SMALL;
  std::array<TokenLogit, orch::digest::kMaxTopK> best;  // 8 KiB, on the stack
  orch::digest::RowSummary summary;
  const orch::Status status = orch::digest::DigestTopLogprobsInto(request, best, &summary);
  if (!status.ok()) return ToCode(status);
  for (std::uint32_t i = 0; i < summary.top_count; ++i) {
    top[i] = orch_token_logit{best[i].id, best[i].logit};
  }
  *out = ToC(summary);
  return ORCH_DIGEST_OK;
}

}  // namespace

extern "C" {

uint32_t orch_digest_abi_version(void) { return ORCH_DIGEST_ABI_VERSION; }

const char* orch_digest_status_name(orch_digest_status status) {
  switch (status) {
    case ORCH_DIGEST_OK:
      return "OK";
    case ORCH_DIGEST_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case ORCH_DIGEST_BUFFER_TOO_SMALL:
      return "BUFFER_TOO_SMALL";
    case ORCH_DIGEST_NULL_POINTER:
      return "NULL_POINTER";
    case ORCH_DIGEST_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

orch_digest_status orch_digest_row(const float* row, uint64_t vocab_size, uint32_t top_k,
                                   int32_t target_id, orch_token_logit* top, uint32_t top_capacity,
                                   orch_row_digest* out) {
  try {
    return DigestRow(ORCH_DIGEST_VERSION_1, row, vocab_size, top_k, target_id, top, top_capacity,
                     out);
  } catch (...) {  // no exception may cross the C boundary
    return ORCH_DIGEST_INTERNAL;
  }
}

orch_digest_status orch_digest_row_versioned(uint32_t digest_version, const float* row,
                                             uint64_t vocab_size, uint32_t top_k, int32_t target_id,
                                             orch_token_logit* top, uint32_t top_capacity,
                                             orch_row_digest* out) {
  try {
    return DigestRow(digest_version, row, vocab_size, top_k, target_id, top, top_capacity, out);
  } catch (...) {  // no exception may cross the C boundary
    return ORCH_DIGEST_INTERNAL;
  }
}

orch_digest_status orch_digest_top_logprobs(uint32_t digest_version, const int32_t* ids,
                                            const float* logprobs, uint32_t k, uint64_t vocab_size,
                                            int32_t target_id, float target_logprob,
                                            uint32_t extra_flags, orch_token_logit* top,
                                            uint32_t top_capacity, orch_row_digest* out) {
  try {
    return DigestTop(digest_version, ids, logprobs, k, vocab_size, target_id, target_logprob,
                     extra_flags, top, top_capacity, out);
  } catch (...) {  // no exception may cross the C boundary
    return ORCH_DIGEST_INTERNAL;
  }
}

orch_digest_status orch_digest_kl_divergence_exact(const float* p_logits, const float* q_logits,
                                                   uint64_t vocab_size, double* out) {
  if (p_logits == nullptr || q_logits == nullptr || out == nullptr) {
    return ORCH_DIGEST_NULL_POINTER;
  }
  try {
    const orch::Result<double> kld = orch::digest::ExactKlDivergence(
        std::span<const float>(p_logits, vocab_size), std::span<const float>(q_logits, vocab_size));
    if (!kld.ok()) return ToCode(kld.status());
    *out = *kld;
    return ORCH_DIGEST_OK;
  } catch (...) {
    return ORCH_DIGEST_INTERNAL;
  }
}

}  // extern "C"
