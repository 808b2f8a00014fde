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
  if (p.vocab_size != q.vocab_size) {
    return InvalidArgument(where + "vocabulary " + std::to_string(p.vocab_size) + " vs " +
                           std::to_string(q.vocab_size));
  }
  if (p.target_id != kNoTarget && q.target_id != kNoTarget && p.target_id != q.target_id) {
    return InvalidArgument(where + "target token " + std::to_string(p.target_id) + " vs " +
                           std::to_string(q.target_id));
  }
  const auto row_ok = [&p](std::span<const float> row) {
    return row.empty() || row.size() == p.vocab_size;
  };
  if (!row_ok(p_row) || !row_ok(q_row)) {
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

void ScoreTarget(const RowDigest& p, const RowDigest& q, PositionComparison* out) {
  if (p.target_id == kNoTarget || q.target_id == kNoTarget) return;
  out->nll_reference = p.logsumexp - p.target_logit;
  out->nll_other = q.logsumexp - q.target_logit;
  out->delta_p = std::exp(-out->nll_other) - std::exp(-out->nll_reference);
}

Status ScoreKld(const RowDigest& p, const RowDigest& q, std::span<const float> p_row,
                std::span<const float> q_row, PositionComparison* out) {
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
  out.identical = p.hash == q.hash;
  out.same_top1 = p.argmax == q.argmax;
  if (p.argmax >= 0 && !p.top.empty()) {
    if (const auto q_logit = OtherLogitAt(q, q_row, p.argmax)) {
      out.abs_top1_logit_delta = std::fabs(double{*q_logit} - p.top[0].logit);
    }
  }
  out.scored = p.is_distribution() && q.is_distribution();
  if (!out.scored) return out;
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
    out.kld_method = p_row.empty() || q_row.empty() ? KldMethod::kTopK : KldMethod::kExact;
    return out;
  }
  ORCH_RETURN_IF_ERROR(
      ScoreKld(p, q, p_row, q_row, &out).WithContext("position " + std::to_string(position)));
  return out;
}

}  // namespace orch::digest
