// Kullback-Leibler divergence KL(P || Q) of two next-token distributions, in
// nats.
//
// P is the reference (baseline coordinate), Q the other side, as in llama.cpp's
// `llama-perplexity --kl-divergence`: KL = sum_i p_i (log p_i - log q_i).
// Two estimators: exact from two full logit rows, and the top-k approximation
// from two digests (docs/metrics.md states it and its measured error). Both are
// pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "base/status.h"
#include "digest/row_digest.h"

namespace orch::digest {

// Exact KL(P || Q) over the whole vocabulary, computed in double precision.
// Rows must have equal, non-zero size and both be distributions (no NaN, no
// +inf, at least one finite logit); otherwise InvalidArgument. Returns +inf
// when some token has p > 0 and q = 0 (a -inf logit in Q only).
Result<double> ExactKlDivergence(std::span<const float> p_logits, std::span<const float> q_logits);

// The raw logit a digest knows for `id`: from its top-k list or its target
// token.
std::optional<float> KnownLogit(const RowDigest& digest, std::int32_t id);

// Top-k approximation of KL(P || Q) from two digests. The buckets are the
// tokens of P's top-k (plus P's target token) whose logit Q's digest also
// knows; every other token is merged into one "rest" bucket on both sides:
//   KL_k = sum_{i in B} p_i log(p_i / q_i) + p_rest log(p_rest / q_rest),
// with p_i = exp(logit_i - logsumexp_P) and p_rest = 1 - sum_{i in B} p_i (the
// same for Q). Merging tokens never increases a divergence (log-sum
// inequality), so KL_k is a lower bound of the exact value up to rounding. A
// q_rest that rounds to zero or below is floored at 1e-30. Preconditions
// (checked): both digests are distributions of the same vocabulary size.
double TopKKlDivergence(const RowDigest& p, const RowDigest& q);

}  // namespace orch::digest
