#include "digest/position_compare.h"

#include <cmath>
#include <optional>
#include <string>

#include "digest/kl_divergence.h"

namespace orch::digest {
namespace {

Status CheckComparable(std::uint64_t position, const RowDigest& p, const RowDigest& q,
                       std::span<const float> p_row, std::span<const float> q_row) {
  const std::string where = "position " + std::to_string(position) + ": ";
  const auto unknown = [](const RowDigest& d) { return d.is_top_k_only() && d.vocab_size == 0; };
  if (p.vocab_size != q.vocab_size && !unknown(p) && !unknown(q)) {
    return InvalidArgument(where + "vocabulary " + std::to_string(p.vocab_size) + " vs " +
                           std::to_string(q.vocab_size));
  }
  if (p.target_id != kNoTarget && q.target_id != kNoTarget && p.target_id != q.target_id) {
    return InvalidArgument(where + "target token " + std::to_string(p.target_id) + " vs " +
                           std::to_string(q.target_id));
  }
  const auto row_ok = [](std::span<const float> row, const RowDigest& d) {
    return row.empty() || (!d.is_top_k_only() && row.size() == d.vocab_size);
  };
  if (!row_ok(p_row, p) || !row_ok(q_row, q)) {
    return InvalidArgument(where + "full row size differs from the digest's vocabulary");
  }
  const auto row_matches = [](std::span<const float> row, const RowDigest& d) {
    return row.empty() || HashRow(row) == d.hash;
  };
  if (!row_matches(p_row, p) || !row_matches(q_row, q)) {
    return Status(StatusCode::kDataLoss, where + "full row does not hash to its digest");
  }
  return Status::Ok();
}

// Q's logit at P's argmax, from Q's full row when present, else from Q's
// digest.
std::optional<float> OtherLogitAt(const RowDigest& q, std::span<const float> q_row,
                                  std::int32_t id) {
  if (!q_row.empty()) return q_row[static_cast<std::size_t>(id)];
  return KnownLogit(q, id);
}

// A log-probability of the row at `id` where known: the full row's value, else
// the digest's, less its logsumexp (0 for a top-k-only row).
std::optional<double> LogProbAt(const RowDigest& d, std::span<const float> row, std::int32_t id) {
  const std::optional<float> value = OtherLogitAt(d, row, id);
  if (!value) return std::nullopt;
  return double{*value} - d.logsumexp;
}

void ScoreTopLogit(const RowDigest& p, const RowDigest& q, std::span<const float> q_row,
                   PositionComparison* out) {
  if (p.argmax < 0 || p.top.empty()) return;
  if (!out->returned_top_k) {
    if (const auto q_logit = OtherLogitAt(q, q_row, p.argmax)) {
      out->abs_top1_logit_delta = std::fabs(double{*q_logit} - p.top[0].logit);
    }
    return;
  }
  const std::optional<double> q_logprob = LogProbAt(q, q_row, p.argmax);
  if (q_logprob) {
    out->abs_top1_logit_delta = std::fabs(*q_logprob - (double{p.top[0].logit} - p.logsumexp));
  }
}

void ScoreTarget(const RowDigest& p, const RowDigest& q, PositionComparison* out) {
  if (p.target_id == kNoTarget || q.target_id == kNoTarget) return;
  // NaN: a server did not return the target's log-probability.
  if (std::isnan(p.target_logit) || std::isnan(q.target_logit)) return;
  out->nll_reference = p.logsumexp - p.target_logit;
  out->nll_other = q.logsumexp - q.target_logit;
  out->delta_p = std::exp(-out->nll_other) - std::exp(-out->nll_reference);
  out->delta_target_logprob = out->nll_reference - out->nll_other;
}

Status ScoreKld(const RowDigest& p, const RowDigest& q, std::span<const float> p_row,
                std::span<const float> q_row, PositionComparison* out) {
  if (out->returned_top_k) {
    out->kld = ReturnedTopKKlDivergence(p, q);
    out->kld_method = KldMethod::kReturnedTopK;
    return Status::Ok();
  }
  if (p_row.empty() || q_row.empty()) {
    out->kld = TopKKlDivergence(p, q);
    out->kld_method = KldMethod::kTopK;
    return Status::Ok();
  }
  ORCH_ASSIGN_OR_RETURN(out->kld, ExactKlDivergence(p_row, q_row));
  out->kld_method = KldMethod::kExact;
  return Status::Ok();
}

}  // namespace

Result<PositionComparison> ComparePosition(std::uint64_t position, const RowDigest& p,
                                           const RowDigest& q, std::span<const float> p_row,
                                           std::span<const float> q_row) {
  ORCH_RETURN_IF_ERROR(CheckComparable(position, p, q, p_row, q_row));
  PositionComparison out;
  out.position = position;
  out.returned_top_k = p.is_top_k_only() || q.is_top_k_only();
  out.identity_comparable = p.is_top_k_only() == q.is_top_k_only();
  out.identical =
      out.identity_comparable && p.hash == q.hash && p.is_processed() == q.is_processed();
  out.same_top1 = p.argmax == q.argmax;
  ScoreTopLogit(p, q, q_row, &out);
  out.scored = p.is_distribution() && q.is_distribution();
  if (!out.scored) return out;
  if (out.returned_top_k) {
    out.tail_reference = TailMass(p);
    out.tail_other = TailMass(q);
  }
  // Bit-identical rows have one set of statistics. Digests of different
  // versions state it with different last bits; P's stands for both, so the
  // digest version alone never shows up as a difference.
  if (out.identical && q.target_id != kNoTarget) {
    ScoreTarget(p, p, &out);
  } else {
    ScoreTarget(p, q, &out);
  }
  if (out.identical) {
    out.kld = 0.0;  // same bits: the distributions are equal
    out.kld_method = out.returned_top_k               ? KldMethod::kReturnedTopK
                     : p_row.empty() || q_row.empty() ? KldMethod::kTopK
                                                      : KldMethod::kExact;
    return out;
  }
  ORCH_RETURN_IF_ERROR(
      ScoreKld(p, q, p_row, q_row, &out).WithContext("position " + std::to_string(position)));
  return out;
}

}  // namespace orch::digest
