// The streaming counterpart of digest::Summarize (docs/metrics.md): the same sums over the
// compared positions, added one position at a time, in memory that does not depend on the
// number of positions. It also keeps the KLD statistics of the two methods apart: exact
// positions (both full rows kept) and top-k bound positions (a lower bound of the exact
// value), because a mean over both mixes two different measurements; and the positions
// whose KLD rests on a server's returned top-k (digest::KldMethod::kReturnedTopK), which
// StreamSummary::kld never includes. Every mean carries its n and a 95% interval
// (report/intervals.h), kept in capped memory.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "digest/position_compare.h"
#include "digest/stream_compare.h"
#include "report/intervals.h"
#include "report/kld_quantiles.h"

namespace orch::report {

// KLD statistics of the positions of one method, nats; NaN when count is 0.
struct KldSummary {
  std::uint64_t count = 0;
  double mean = std::numeric_limits<double>::quiet_NaN();
  double median = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  bool approximate_quantiles = false;  // report/kld_quantiles.h moved to its histogram
  Interval ci95;  // of the mean: block bootstrap over the positions (n = count)
};

// The pair's proportions and PPL ratio with their n and 95% intervals.
struct PairEstimates {
  Estimate top1_agreement;  // Wilson, over the compared positions
  Estimate flip_rate;       // 1 - top-1 agreement: Wilson, over the compared positions
  // exp of the mean of nll_other - nll_reference and of its block-bootstrap interval, over
  // the target positions (n = StreamSummary::target_count).
  Estimate ppl_ratio;
};

// Which positions StreamSummary::kld covers: "exact", "bound", "mixed" (both kinds: its
// mean is not one measurement) or "none".
std::string_view KldMethodName(const digest::KldStats& kld);

class SummaryAccumulator {
 public:
  void Add(const digest::PositionComparison& c);

  struct Result {
    digest::StreamSummary summary;  // kld over every scored position, as digest defines it
    bool kld_quantiles_approximate = false;
    KldSummary exact;
    KldSummary bound;
    KldSummary returned_top_k;  // also StreamSummary::returned_kld
    PairEstimates estimates;
  };
  Result Finish(std::uint64_t reference_length, std::uint64_t other_length) const;

 private:
  // Sums and order statistics of one set of KLD values.
  struct KldSums {
    std::uint64_t count = 0;
    double sum = 0.0;
    double max = 0.0;
    KldQuantiles quantiles;
    BlockSums blocks;  // for the mean's interval
    void Add(double kld);
    KldSummary Finish() const;
  };
  void AddTarget(const digest::PositionComparison& c);
  void FinishTarget(digest::StreamSummary& s) const;
  PairEstimates Estimates() const;

  digest::StreamSummary s_;
  std::uint64_t compared_ = 0, same_top1_ = 0, scored_same_top1_ = 0;
  std::optional<std::uint64_t> first_not_identical_;
  KldSums all_, exact_, bound_, returned_;
  double dp_sum_ = 0.0, dp2_sum_ = 0.0, nll_p_ = 0.0, nll_q_ = 0.0;
  BlockSums log_ppl_ratio_;  // nll_other - nll_reference per target position
  double top1_sum_ = 0.0, top1_max_ = 0.0;
};

}  // namespace orch::report
