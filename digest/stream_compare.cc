#include "digest/stream_compare.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "digest/order_statistics.h"

namespace orch::digest {
namespace {

// Full rows must be strictly increasing in position and inside the stream.
Status ValidateFullRows(const DigestStream& stream, const char* side) {
  const std::span<const FullRow> rows = stream.full_rows;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool in_order = i == 0 || rows[i - 1].position < rows[i].position;
    if (!in_order || rows[i].position >= stream.digests.size()) {
      return InvalidArgument(std::string(side) + " full row at position " +
                             std::to_string(rows[i].position) +
                             " is out of order or beyond the stream");
    }
  }
  return Status::Ok();
}

// Walks a validated list of full rows alongside increasing positions.
class FullRowCursor {
 public:
  explicit FullRowCursor(std::span<const FullRow> rows) : rows_(rows) {}

  // The row captured at `position`, or an empty span. Positions must not
  // decrease.
  std::span<const float> At(std::uint64_t position) {
    while (next_ < rows_.size() && rows_[next_].position < position) ++next_;
    if (next_ < rows_.size() && rows_[next_].position == position) {
      return rows_[next_].logits;
    }
    return {};
  }

 private:
  std::span<const FullRow> rows_;
  std::size_t next_ = 0;
};

double Fraction(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(part) / static_cast<double>(whole);
}

void SummarizeIdentity(std::span<const PositionComparison> positions, StreamSummary* s) {
  std::uint64_t same_top1 = 0;
  std::uint64_t scored_same_top1 = 0;
  std::optional<std::uint64_t> first_not_identical;
  for (const PositionComparison& c : positions) {
    if (c.identical) ++s->identical_rows;
    if (!c.identity_comparable) ++s->not_comparable_rows;
    if (c.returned_top_k) ++s->returned_top_k_positions;
    if (!c.identical && c.identity_comparable && !s->first_divergence) {
      s->first_divergence = c.position;
    }
    if (!c.identical && !first_not_identical) first_not_identical = c.position;
    if (c.same_top1) ++same_top1;
    if (c.scored) ++s->scored;
    if (c.scored && c.same_top1) ++scored_same_top1;
  }
  s->common_prefix = first_not_identical.value_or(positions.size());
  s->top1_agreement = Fraction(same_top1, positions.size());
  s->same_top_p = Fraction(scored_same_top1, s->scored);
}

// The KLD statistics of the positions whose method is in `methods`.
KldStats SummarizeKld(std::span<const PositionComparison> positions,
                      std::initializer_list<KldMethod> methods) {
  std::vector<double> values;
  KldStats stats;
  double sum = 0.0;
  for (const PositionComparison& c : positions) {
    if (std::find(methods.begin(), methods.end(), c.kld_method) == methods.end()) continue;
    values.push_back(c.kld);
    sum += c.kld;
    if (c.kld_method == KldMethod::kExact) ++stats.exact_count;
  }
  stats.count = values.size();
  if (values.empty()) return stats;
  std::sort(values.begin(), values.end());
  stats.mean = sum / static_cast<double>(values.size());
  stats.median = SortedMedian(values);
  stats.p99 = SortedPercentile(values, 0.99);
  stats.max = values.back();
  return stats;
}

void SummarizeTarget(std::span<const PositionComparison> positions, StreamSummary* s) {
  double sum_dp = 0.0, sum_dp2 = 0.0, sum_nll_p = 0.0, sum_nll_q = 0.0;
  for (const PositionComparison& c : positions) {
    if (!c.scored || std::isnan(c.delta_p)) continue;
    ++s->target_count;
    sum_dp += c.delta_p;
    sum_dp2 += c.delta_p * c.delta_p;
    sum_nll_p += c.nll_reference;
    sum_nll_q += c.nll_other;
  }
  if (s->target_count == 0) return;
  const auto n = static_cast<double>(s->target_count);
  s->mean_delta_p = sum_dp / n;
  s->rms_delta_p = std::sqrt(sum_dp2 / n);
  s->ppl_reference = std::exp(sum_nll_p / n);
  s->ppl_other = std::exp(sum_nll_q / n);
  s->ppl_ratio = std::exp((sum_nll_q - sum_nll_p) / n);
}

void SummarizeTopLogit(std::span<const PositionComparison> positions, StreamSummary* s) {
  double sum = 0.0, max = 0.0;
  for (const PositionComparison& c : positions) {
    if (std::isnan(c.abs_top1_logit_delta)) continue;
    ++s->top1_logit_count;
    sum += c.abs_top1_logit_delta;
    max = std::max(max, c.abs_top1_logit_delta);
  }
  if (s->top1_logit_count == 0) return;
  s->mean_abs_top1_logit_delta = sum / static_cast<double>(s->top1_logit_count);
  s->max_abs_top1_logit_delta = max;
}

}  // namespace

Result<StreamComparison> CompareStreams(const DigestStream& reference, const DigestStream& other) {
  ORCH_RETURN_IF_ERROR(ValidateFullRows(reference, "reference"));
  ORCH_RETURN_IF_ERROR(ValidateFullRows(other, "other"));
  const std::size_t n = std::min(reference.digests.size(), other.digests.size());
  StreamComparison out;
  out.positions.reserve(n);
  FullRowCursor p_rows(reference.full_rows);
  FullRowCursor q_rows(other.full_rows);
  for (std::size_t i = 0; i < n; ++i) {
    ORCH_ASSIGN_OR_RETURN(
        PositionComparison c,
        ComparePosition(i, reference.digests[i], other.digests[i], p_rows.At(i), q_rows.At(i)));
    out.positions.push_back(c);
  }
  out.summary = Summarize(out.positions, reference.digests.size(), other.digests.size());
  return out;
}

StreamSummary Summarize(std::span<const PositionComparison> positions,
                        std::uint64_t reference_length, std::uint64_t other_length) {
  StreamSummary s;
  s.reference_length = reference_length;
  s.other_length = other_length;
  s.compared = positions.size();
  SummarizeIdentity(positions, &s);
  s.kld = SummarizeKld(positions, {KldMethod::kExact, KldMethod::kTopK});
  s.returned_kld = SummarizeKld(positions, {KldMethod::kReturnedTopK});
  SummarizeTarget(positions, &s);
  SummarizeTopLogit(positions, &s);
  return s;
}

}  // namespace orch::digest
