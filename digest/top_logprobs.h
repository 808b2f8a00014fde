// Digest of a top-k-only row: the K most likely tokens' log-probabilities as a
// server engine (vLLM, SGLang, llama-server, Ollama) returns them, instead of
// the full logit row (docs/metrics.md, "Top-k-only rows").
//
// The digest is flagged kRowTopKOnly (and kRowProcessed when the caller says the
// values are after the server's sampling transforms). Its top is the k pairs
// sorted by value descending, ties by lower id, NaN values last (by id);
// argmax = top[0].id (-1 when every value is NaN); logsumexp = 0 (the values are
// log-probabilities; NaN when the row is not a distribution); entropy = NaN
// (the full row is unknown); the hash is XXH3-128 of the sorted pairs' bytes
// (int32 id, float32 bits, little-endian, pair after pair), so two top-k rows
// hash equal iff they returned the same ids with the same float bits. NaN,
// +inf and "no finite value" set the usual flags. The target's log-probability
// is NaN when the server did not return it (the target then lies outside the
// returned k). Pure; allocates nothing but the output's top list.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "base/status.h"
#include "digest/row_digest.h"

namespace orch::digest {

struct TopLogprobsRequest {
  DigestVersion version = kCurrentDigestVersion;  // the version byte its record carries
  std::span<const std::int32_t> ids;              // the returned tokens, any order
  std::span<const float> logprobs;                // their log-probabilities, same length
  std::uint64_t vocab_size = 0;                   // 0: unknown
  std::int32_t target_id = kNoTarget;
  float target_logprob = std::numeric_limits<float>::quiet_NaN();  // NaN: not returned
  std::uint32_t extra_flags = 0;                                   // 0 or kRowProcessed
};

// InvalidArgument naming the value when: k (ids.size()) is 0 or above kMaxTopK,
// ids and logprobs differ in length, an id is negative, repeated, or not below a
// known vocab_size, vocab_size exceeds the int32 id range, the target is not
// kNoTarget nor a valid id, extra_flags has a bit other than kRowProcessed, or
// an unknown version.
Status ValidateTopLogprobsRequest(const TopLogprobsRequest& request);

// Digests the request into `summary` and the first k entries of `top` (which
// must hold at least k entries). When the target is among the returned ids
// and target_logprob is NaN, the returned value is its log-probability.
Status DigestTopLogprobsInto(const TopLogprobsRequest& request, std::span<TokenLogit> top,
                             RowSummary* summary);

// As DigestTopLogprobsInto, into a RowDigest. On error `out` is unchanged.
Status DigestTopLogprobs(const TopLogprobsRequest& request, RowDigest* out);

}  // namespace orch::digest
