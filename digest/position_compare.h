// Comparison of one workload position across two runs: the reference P and the
// other side Q. Pure: digests (and full rows where captured) in, one
// PositionComparison out. Definitions and their llama.cpp counterparts are in
// docs/metrics.md.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "base/status.h"
#include "digest/row_digest.h"

namespace orch::digest {

// What a KLD value rests on (docs/metrics.md). The three are different
// measurements and are never averaged together.
enum class KldMethod : std::uint8_t {
  kNone,          // not scored: a row is not a distribution
  kExact,         // both full rows were captured
  kTopK,          // the bound from two full-row digests (kl_divergence.h)
  kReturnedTopK,  // a side is a top-k-only row: over the returned tokens
};

// Per-position metrics. NaN marks a metric that the inputs cannot give.
struct PositionComparison {
  std::uint64_t position = 0;
  // Both full rows: equal vocabulary and raw-row hash. Both top-k-only rows:
  // the same returned ids with the same value bits (and the same processed
  // flag). A full row against a top-k-only row: never (identity_comparable
  // false).
  bool identical = false;
  bool identity_comparable = true;  // false: one side full row, the other top-k-only
  bool returned_top_k = false;      // a side is top-k-only: the figures rest on returned top-k
  bool same_top1 = false;           // equal argmax (NaN logits ignored, lower id on ties)
  bool scored = false;              // both rows are distributions: KLD, Δp, NLL are defined
  KldMethod kld_method = KldMethod::kNone;
  double kld = std::numeric_limits<double>::quiet_NaN();  // KL(P || Q), nats
  // p_Q(target) - p_P(target); NaN unless both sides carry the target logit
  // (a top-k-only side carries it only when the server returned it).
  double delta_p = std::numeric_limits<double>::quiet_NaN();
  // log p_Q(target) - log p_P(target), under the same condition.
  double delta_target_logprob = std::numeric_limits<double>::quiet_NaN();
  // -log p(target) on each side; NaN without a target.
  double nll_reference = std::numeric_limits<double>::quiet_NaN();
  double nll_other = std::numeric_limits<double>::quiet_NaN();
  // |logit_Q - logit_P| at P's argmax; NaN when Q's digest does not know that
  // token (not in its top-k nor its target) and no full row of Q was captured.
  // When returned_top_k: |log q(a) - log p(a)| instead (log-probabilities:
  // a top-k-only row has no logits), a full-row side's from its logsumexp.
  double abs_top1_logit_delta = std::numeric_limits<double>::quiet_NaN();
  // When returned_top_k: each side's mass outside its top list (TailMass).
  double tail_reference = std::numeric_limits<double>::quiet_NaN();
  double tail_other = std::numeric_limits<double>::quiet_NaN();
};

// Compares the digests `p` and `q` of position `position`. The digests may be of
// different versions (RowDigest::version): identity is the raw row's hash, and
// for identical rows every metric comes from P's digest alone (KLD 0, Δp 0,
// equal NLLs), so v1 against v2 of the same rows reads as identical. For
// different rows each side's own statistics are used; mixing versions then adds
// at most the two versions' error bounds (docs/metrics.md) to NLL, Δp and
// top-k KLD. `p_row` / `q_row`
// are the full logit rows when captured, else empty; a given row must match its
// digest's vocabulary size. Errors (InvalidArgument): different vocabulary
// sizes, different target tokens (the runs did not teacher-force the same
// workload), a full row of the wrong size. DataLoss when a full row's hash
// differs from its digest's. A top-k-only side (RowDigest::is_top_k_only) is
// compared as docs/metrics.md "Top-k-only rows" says: its vocabulary size may be
// 0 (unknown), and its KLD is kReturnedTopK.
Result<PositionComparison> ComparePosition(std::uint64_t position, const RowDigest& p,
                                           const RowDigest& q, std::span<const float> p_row,
                                           std::span<const float> q_row);

}  // namespace orch::digest
