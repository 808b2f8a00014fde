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

enum class KldMethod : std::uint8_t {
  kNone,   // not scored: a row is not a distribution
  kExact,  // both full rows were captured
  kTopK,   // from the two digests (kl_divergence.h)
};

// Per-position metrics. NaN marks a metric that the inputs cannot give.
struct PositionComparison {
  std::uint64_t position = 0;
  bool identical = false;  // equal vocabulary and equal raw-row hash
  bool same_top1 = false;  // equal argmax (NaN logits ignored, lower id on ties)
  bool scored = false;     // both rows are distributions: KLD, Δp, NLL are defined
  KldMethod kld_method = KldMethod::kNone;
  double kld = std::numeric_limits<double>::quiet_NaN();  // KL(P || Q), nats
  // p_Q(target) - p_P(target); NaN unless both sides carry the target logit.
  double delta_p = std::numeric_limits<double>::quiet_NaN();
  // -log p(target) on each side; NaN without a target.
  double nll_reference = std::numeric_limits<double>::quiet_NaN();
  double nll_other = std::numeric_limits<double>::quiet_NaN();
  // |logit_Q - logit_P| at P's argmax; NaN when Q's digest does not know that
  // token (not in its top-k nor its target) and no full row of Q was captured.
  double abs_top1_logit_delta = std::numeric_limits<double>::quiet_NaN();
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
// differs from its digest's.
Result<PositionComparison> ComparePosition(std::uint64_t position, const RowDigest& p,
                                           const RowDigest& q, std::span<const float> p_row,
                                           std::span<const float> q_row);

}  // namespace orch::digest
