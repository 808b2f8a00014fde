#include "report/pair_compare.h"

#include <algorithm>
#include <cmath>

#include "digest/position_compare.h"
#include "report/kld_quantiles.h"
#include "report/paired_scan.h"

namespace orch::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

std::uint64_t HashRecord(std::uint64_t h, const digest::PositionRecord& r) {
  h = Mix(h, r.position);
  h = Mix(h, r.digest.hash.low);
  h = Mix(h, r.digest.hash.high);
  h = Mix(h, static_cast<std::uint32_t>(r.input_token));
  return Mix(h, static_cast<std::uint32_t>(r.output_token));
}

double Margin(const digest::RowDigest& d) {
  if (d.top.size() < 2) return kNaN;
  return static_cast<double>(d.top[0].logit) - static_cast<double>(d.top[1].logit);
}

// The streaming counterpart of digest::Summarize: the same sums, in one pass.
class SummaryAccumulator {
 public:
  void Add(const digest::PositionComparison& c) {
    ++compared_;
    if (c.identical) ++s_.identical_rows;
    if (!c.identical && !s_.first_divergence) s_.first_divergence = c.position;
    if (c.same_top1) ++same_top1_;
    if (c.scored) ++s_.scored;
    if (c.scored && c.same_top1) ++scored_same_top1_;
    if (c.kld_method != digest::KldMethod::kNone) AddKld(c);
    if (c.scored && !std::isnan(c.delta_p)) AddTarget(c);
    if (!std::isnan(c.abs_top1_logit_delta)) {
      ++s_.top1_logit_count;
      top1_sum_ += c.abs_top1_logit_delta;
      top1_max_ = std::max(top1_max_, c.abs_top1_logit_delta);
    }
  }

  digest::StreamSummary Finish(std::uint64_t reference_length, std::uint64_t other_length,
                               bool* approximate) {
    s_.reference_length = reference_length;
    s_.other_length = other_length;
    s_.compared = compared_;
    s_.common_prefix = s_.first_divergence.value_or(compared_);
    s_.top1_agreement = Fraction(same_top1_, compared_);
    s_.same_top_p = Fraction(scored_same_top1_, s_.scored);
    FinishKld();
    FinishTarget();
    if (s_.top1_logit_count > 0) {
      s_.mean_abs_top1_logit_delta = top1_sum_ / static_cast<double>(s_.top1_logit_count);
      s_.max_abs_top1_logit_delta = top1_max_;
    }
    *approximate = quantiles_.approximate();
    return s_;
  }

 private:
  static double Fraction(std::uint64_t n, std::uint64_t d) {
    return d == 0 ? kNaN : static_cast<double>(n) / static_cast<double>(d);
  }
  void AddKld(const digest::PositionComparison& c) {
    ++s_.kld.count;
    if (c.kld_method == digest::KldMethod::kExact) ++s_.kld.exact_count;
    kld_sum_ += c.kld;
    kld_max_ = s_.kld.count == 1 ? c.kld : std::max(kld_max_, c.kld);
    quantiles_.Add(c.kld);
  }
  void AddTarget(const digest::PositionComparison& c) {
    ++s_.target_count;
    dp_sum_ += c.delta_p;
    dp2_sum_ += c.delta_p * c.delta_p;
    nll_p_ += c.nll_reference;
    nll_q_ += c.nll_other;
  }
  void FinishKld() {
    if (s_.kld.count == 0) return;
    s_.kld.mean = kld_sum_ / static_cast<double>(s_.kld.count);
    const KldQuantiles::Quantiles q = quantiles_.Compute();
    s_.kld.median = q.median;
    s_.kld.p99 = q.p99;
    s_.kld.max = kld_max_;
  }
  void FinishTarget() {
    if (s_.target_count == 0) return;
    const auto n = static_cast<double>(s_.target_count);
    s_.mean_delta_p = dp_sum_ / n;
    s_.rms_delta_p = std::sqrt(dp2_sum_ / n);
    s_.ppl_reference = std::exp(nll_p_ / n);
    s_.ppl_other = std::exp(nll_q_ / n);
    s_.ppl_ratio = std::exp((nll_q_ - nll_p_) / n);
  }

  digest::StreamSummary s_;
  std::uint64_t compared_ = 0, same_top1_ = 0, scored_same_top1_ = 0;
  double kld_sum_ = 0.0, kld_max_ = 0.0;
  double dp_sum_ = 0.0, dp2_sum_ = 0.0, nll_p_ = 0.0, nll_q_ = 0.0;
  double top1_sum_ = 0.0, top1_max_ = 0.0;
  KldQuantiles quantiles_;
};

void AddToPlot(PositionPlot& plot, std::uint64_t position, double kld, bool flip) {
  while (position / plot.bin_width >= kPlotBins) {  // halve the resolution
    std::size_t half = (plot.max_kld.size() + 1) / 2;
    for (std::size_t i = 0; i < half; ++i) {
      double a = plot.max_kld[2 * i];
      double b = 2 * i + 1 < plot.max_kld.size() ? plot.max_kld[2 * i + 1] : kNaN;
      plot.max_kld[i] = std::isnan(a) ? b : (std::isnan(b) ? a : std::max(a, b));
      plot.flips[i] =
          plot.flips[2 * i] + (2 * i + 1 < plot.flips.size() ? plot.flips[2 * i + 1] : 0);
    }
    plot.max_kld.resize(half);
    plot.flips.resize(half);
    plot.bin_width *= 2;
  }
  std::size_t bin = position / plot.bin_width;
  if (plot.max_kld.size() <= bin) {
    plot.max_kld.resize(bin + 1, kNaN);
    plot.flips.resize(bin + 1, 0);
  }
  if (!std::isnan(kld)) {
    double& m = plot.max_kld[bin];
    m = std::isnan(m) ? kld : std::max(m, kld);
  }
  if (flip) ++plot.flips[bin];
}

class PairAccumulator {
 public:
  explicit PairAccumulator(const PairOptions& options) : options_(options) {}

  Status Add(const digest::PositionRecord* p, const digest::PositionRecord* q) {
    if (p != nullptr) Side(*p, out_.reference_hash, reference_length_, out_.reference_generated);
    if (q != nullptr) Side(*q, out_.other_hash, other_length_, out_.other_generated);
    if (p == nullptr || q == nullptr) return Status();
    const bool tokens_matched = !out_.first_token_difference.has_value();
    CompareTokens(*p, *q);
    if (options_.stop_metrics_at_token_divergence && !tokens_matched) return Status();
    ORCH_ASSIGN_OR_RETURN(
        digest::PositionComparison c,
        digest::ComparePosition(p->position, p->digest, q->digest, p->full_row, q->full_row));
    summary_.Add(c);
    const bool flip = !c.same_top1;
    if (flip) AddFlip(*p, *q, c);
    AddToPlot(out_.plot, p->position, c.kld_method == digest::KldMethod::kNone ? kNaN : c.kld,
              flip);
    return Status();
  }

  PairResult Finish() {
    out_.summary =
        summary_.Finish(reference_length_, other_length_, &out_.kld_quantiles_approximate);
    return std::move(out_);
  }

 private:
  static void Side(const digest::PositionRecord& r, std::uint64_t& hash, std::uint64_t& length,
                   std::uint64_t& generated) {
    hash = HashRecord(hash, r);
    ++length;
    if (r.output_token >= 0) ++generated;
  }

  void CompareTokens(const digest::PositionRecord& p, const digest::PositionRecord& q) {
    if (p.output_token < 0 || q.output_token < 0 || out_.first_token_difference) return;
    if (p.output_token == q.output_token) {
      ++out_.generated_common_prefix;
      return;
    }
    out_.first_token_difference =
        TokenDifference{out_.generated_common_prefix, p.output_token, q.output_token};
  }

  void AddFlip(const digest::PositionRecord& p, const digest::PositionRecord& q,
               const digest::PositionComparison& c) {
    ++out_.flip_count;
    if (out_.flips.size() < kMaxListedFlips) {
      out_.flips.push_back({p.position, p.digest.argmax, q.digest.argmax, Margin(p.digest),
                            c.abs_top1_logit_delta, false});
    }
    if (out_.cluster_count > 0 && p.position - last_flip_ <= kClusterGap) {
      if (out_.clusters.size() == out_.cluster_count) {
        out_.clusters.back().last = p.position;
        ++out_.clusters.back().flips;
      }
    } else {
      ++out_.cluster_count;
      if (out_.clusters.size() < kMaxListedClusters) {
        out_.clusters.push_back({p.position, p.position, 1});
      }
    }
    last_flip_ = p.position;
  }

  PairOptions options_;
  PairResult out_;
  SummaryAccumulator summary_;
  std::uint64_t reference_length_ = 0, other_length_ = 0, last_flip_ = 0;
};

}  // namespace

Result<PairResult> ComparePair(RunSource& source, std::string_view reference_run,
                               std::string_view other_run, const PairOptions& options) {
  PairAccumulator accumulator(options);
  Status compare_error;
  Status scanned =
      ScanPaired(source, reference_run, other_run,
                 [&](const digest::PositionRecord* p, const digest::PositionRecord* q) {
                   compare_error = accumulator.Add(p, q);
                   return compare_error.ok();
                 });
  ORCH_RETURN_IF_ERROR(scanned);
  ORCH_RETURN_IF_ERROR(compare_error.WithContext("compare run " + std::string(other_run) +
                                                 " with " + std::string(reference_run)));
  return accumulator.Finish();
}

}  // namespace orch::report
