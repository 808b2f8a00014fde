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
// token (unless that value is NaN: a top-k-only row's target not returned).
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

// The "returned top-k" KL(P || Q), when at least one side is a top-k-only row
// (a server's returned log-probabilities, top_logprobs.h): the same buckets as
// TopKKlDivergence (every returned token of P, plus P's target, whose value Q
// also returned; a token one side did not return lies in that side's tail, so
// it joins the tail bucket on both sides) and one tail bucket per side holding
// 1 - Σ p_i of the bucketed tokens. A top-k-only side's p_i is exp(log-prob);
// a full-row digest's is exp(logit - logsumexp). A different measurement from
// the exact value and from the full-row top-k bound: of the distributions the
// servers returned (after their transforms when a row is kRowProcessed), over
// a partition coarser than the vocabulary. Preconditions (checked): both are
// distributions, at least one is top-k-only, and their vocabulary sizes are
// equal or a top-k-only side's is 0 (unknown).
double ReturnedTopKKlDivergence(const RowDigest& p, const RowDigest& q);

// The probability mass outside a digest's top list: 1 - Σ exp(value - logsumexp)
// over its top (a top-k-only row: 1 - Σ exp(log-prob)); clamped at 0; NaN when
// the row is not a distribution.
double TailMass(const RowDigest& digest);

}  // namespace orch::digest
