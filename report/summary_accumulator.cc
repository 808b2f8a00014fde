#include "report/summary_accumulator.h"

#include <algorithm>
#include <cmath>

namespace orch::report {
namespace {

constexpr double kSummaryNaN = std::numeric_limits<double>::quiet_NaN();

double Fraction(std::uint64_t n, std::uint64_t d) {
  return d == 0 ? kSummaryNaN : static_cast<double>(n) / static_cast<double>(d);
}

}  // namespace

std::string_view KldMethodName(const digest::KldStats& kld) {
  if (kld.count == 0) return "none";
  if (kld.exact_count == kld.count) return "exact";
  if (kld.exact_count == 0) return "bound";
  return "mixed";
}

void SummaryAccumulator::KldSums::Add(double kld) {
  max = count == 0 ? kld : std::max(max, kld);
  ++count;
  sum += kld;
  quantiles.Add(kld);
  blocks.Add(kld);
}

KldSummary SummaryAccumulator::KldSums::Finish() const {
  KldSummary out;
  out.count = count;
  out.ci95 = blocks.Bootstrap().ci95;
  if (count == 0) return out;
  out.mean = sum / static_cast<double>(count);
  const KldQuantiles::Quantiles q = quantiles.Compute();
  out.median = q.median;
  out.p99 = q.p99;
  out.max = max;
  out.approximate_quantiles = quantiles.approximate();
  return out;
}

void SummaryAccumulator::Add(const digest::PositionComparison& c) {
  ++compared_;
  if (c.identical) ++s_.identical_rows;
  if (!c.identity_comparable) ++s_.not_comparable_rows;
  if (c.returned_top_k) ++s_.returned_top_k_positions;
  if (!c.identical && c.identity_comparable && !s_.first_divergence) {
    s_.first_divergence = c.position;
  }
  if (!c.identical && !first_not_identical_) first_not_identical_ = c.position;
  if (c.same_top1) ++same_top1_;
  if (c.scored) ++s_.scored;
  if (c.scored && c.same_top1) ++scored_same_top1_;
  if (c.kld_method == digest::KldMethod::kReturnedTopK) {
    returned_.Add(c.kld);
  } else if (c.kld_method != digest::KldMethod::kNone) {
    all_.Add(c.kld);
    (c.kld_method == digest::KldMethod::kExact ? exact_ : bound_).Add(c.kld);
  }
  if (c.scored && !std::isnan(c.delta_p)) AddTarget(c);
  if (!std::isnan(c.abs_top1_logit_delta)) {
    ++s_.top1_logit_count;
    top1_sum_ += c.abs_top1_logit_delta;
    top1_max_ = std::max(top1_max_, c.abs_top1_logit_delta);
  }
}

void SummaryAccumulator::AddTarget(const digest::PositionComparison& c) {
  ++s_.target_count;
  dp_sum_ += c.delta_p;
  dp2_sum_ += c.delta_p * c.delta_p;
  nll_p_ += c.nll_reference;
  nll_q_ += c.nll_other;
  log_ppl_ratio_.Add(c.nll_other - c.nll_reference);
}

// Proportions by Wilson; the PPL ratio as exp of its log's bootstrapped mean.
PairEstimates SummaryAccumulator::Estimates() const {
  PairEstimates e{WilsonEstimate(same_top1_, compared_),
                  WilsonEstimate(compared_ - same_top1_, compared_), log_ppl_ratio_.Bootstrap()};
  Estimate& ppl = e.ppl_ratio;
  ppl.mean = std::exp(ppl.mean);
  ppl.ci95.lo = std::exp(ppl.ci95.lo);
  ppl.ci95.hi = std::exp(ppl.ci95.hi);
  return e;
}

void SummaryAccumulator::FinishTarget(digest::StreamSummary& s) const {
  if (s.target_count == 0) return;
  const auto n = static_cast<double>(s.target_count);
  s.mean_delta_p = dp_sum_ / n;
  s.rms_delta_p = std::sqrt(dp2_sum_ / n);
  s.ppl_reference = std::exp(nll_p_ / n);
  s.ppl_other = std::exp(nll_q_ / n);
  s.ppl_ratio = std::exp((nll_q_ - nll_p_) / n);
}

SummaryAccumulator::Result SummaryAccumulator::Finish(std::uint64_t reference_length,
                                                      std::uint64_t other_length) const {
  Result out{s_, false, exact_.Finish(), bound_.Finish(), returned_.Finish(), Estimates()};
  digest::StreamSummary& s = out.summary;
  s.reference_length = reference_length;
  s.other_length = other_length;
  s.compared = compared_;
  s.common_prefix = first_not_identical_.value_or(compared_);
  s.top1_agreement = Fraction(same_top1_, compared_);
  s.same_top_p = Fraction(scored_same_top1_, s.scored);
  const KldSummary all = all_.Finish();
  s.kld = {all.count, exact_.count, all.mean, all.median, all.p99, all.max};
  out.kld_quantiles_approximate = all.approximate_quantiles;
  const KldSummary& r = out.returned_top_k;
  s.returned_kld = {r.count, 0, r.mean, r.median, r.p99, r.max};
  FinishTarget(s);
  if (s.target_count > 0) out.estimates.ppl_ratio.mean = s.ppl_ratio;  // one rounding for both
  if (s.top1_logit_count > 0) {
    s.mean_abs_top1_logit_delta = top1_sum_ / static_cast<double>(s.top1_logit_count);
    s.max_abs_top1_logit_delta = top1_max_;
  }
  return out;
}

}  // namespace orch::report
