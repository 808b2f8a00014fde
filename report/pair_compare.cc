#include "report/pair_compare.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "digest/position_compare.h"
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

class PairAccumulator {
 public:
  explicit PairAccumulator(const PairOptions& options) : options_(options) {}

  Status Add(const digest::PositionRecord* p, const digest::PositionRecord* q) {
    if (p != nullptr) Side(*p, out_.reference_hash, reference_length_, out_.reference_generated);
    if (q != nullptr) Side(*q, out_.other_hash, other_length_, out_.other_generated);
    if (p != nullptr) Remember(*p);
    if (p == nullptr || q == nullptr) return Status();
    const bool tokens_matched = !out_.first_token_difference.has_value();
    CompareTokens(*p, *q);
    if (options_.stop_metrics_at_token_divergence && !tokens_matched) return Status();
    ORCH_ASSIGN_OR_RETURN(
        digest::PositionComparison c,
        digest::ComparePosition(p->position, p->digest, q->digest, p->full_row, q->full_row));
    summary_.Add(c);
    CountTopK(p->digest, q->digest, c);
    const bool flip = !c.same_top1;
    if (flip) AddFlip(*p, *q, c);
    // A returned top-k value is another measurement: its own series of the plot.
    const bool scored = c.kld_method != digest::KldMethod::kNone;
    AddToPlot(out_.plot,
              {p->position, scored ? c.kld : kNaN, c.kld_method == digest::KldMethod::kExact,
               c.kld_method == digest::KldMethod::kReturnedTopK, Margin(p->digest), flip});
    return Status();
  }

  PairResult Finish() {
    SummaryAccumulator::Result s = summary_.Finish(reference_length_, other_length_);
    out_.summary = s.summary;
    out_.kld_quantiles_approximate = s.kld_quantiles_approximate;
    out_.kld_exact = s.exact;
    out_.kld_bound = s.bound;
    out_.kld_returned_top_k = s.returned_top_k;
    out_.estimates = s.estimates;
    return std::move(out_);
  }

 private:
  void CountTopK(const digest::RowDigest& p, const digest::RowDigest& q,
                 const digest::PositionComparison& c) {
    ReturnedTopK& t = out_.returned_top_k;
    if (c.returned_top_k) ++t.positions;
    for (const digest::RowDigest* d : {&p, &q}) {
      if (!d->is_top_k_only()) continue;
      ++(d == &p ? t.reference_rows : t.other_rows);
      const auto k = static_cast<std::uint32_t>(d->top.size());
      t.k_min = t.k_min == 0 ? k : std::min(t.k_min, k);
      t.k_max = std::max(t.k_max, k);
      t.processed = t.processed || d->is_processed();
    }
  }

  static void Side(const digest::PositionRecord& r, std::uint64_t& hash, std::uint64_t& length,
                   std::uint64_t& generated) {
    hash = HashRecord(hash, r);
    ++length;
    if (r.output_token >= 0) ++generated;
  }

  // The reference's last kFlipContext input tokens, for the context of a flip.
  void Remember(const digest::PositionRecord& p) {
    recent_.push_back(p.input_token);
    if (recent_.size() > kFlipContext) recent_.pop_front();
  }

  void CompareTokens(const digest::PositionRecord& p, const digest::PositionRecord& q) {
    if (p.output_token < 0 || q.output_token < 0 || out_.first_token_difference) return;
    if (p.output_token == q.output_token) {
      ++out_.generated_common_prefix;
      return;
    }
    out_.first_token_difference = TokenDifference{out_.generated_common_prefix,
                                                  p.output_token,
                                                  q.output_token,
                                                  p.position,
                                                  p.digest.argmax,
                                                  q.digest.argmax,
                                                  Margin(p.digest),
                                                  Margin(q.digest)};
  }

  void AddFlip(const digest::PositionRecord& p, const digest::PositionRecord& q,
               const digest::PositionComparison& c) {
    ++out_.flip_count;
    if (out_.flips.size() < kMaxListedFlips) {
      out_.flips.push_back({p.position, p.digest.argmax, q.digest.argmax, Margin(p.digest),
                            c.abs_top1_logit_delta, false,
                            std::vector<std::int32_t>(recent_.begin(), recent_.end())});
    }
    AddToCluster(p.position);
  }

  void AddToCluster(std::uint64_t position) {
    if (out_.cluster_count > 0 && position - last_flip_ <= kClusterGap) {
      if (out_.clusters.size() == out_.cluster_count) {
        out_.clusters.back().last = position;
        ++out_.clusters.back().flips;
      }
    } else {
      ++out_.cluster_count;
      if (out_.clusters.size() < kMaxListedClusters) {
        out_.clusters.push_back({position, position, 1});
      }
    }
    last_flip_ = position;
  }

  PairOptions options_;
  PairResult out_;
  SummaryAccumulator summary_;
  std::deque<std::int32_t> recent_;
  std::uint64_t reference_length_ = 0, other_length_ = 0, last_flip_ = 0;
};

}  // namespace

std::string ReturnedTopKName(const ReturnedTopK& t) {
  if (!t.any()) return "";
  std::string k = std::to_string(t.k_min);
  if (t.k_max != t.k_min) k += ".." + std::to_string(t.k_max);
  return "returned top-k (K=" + k + (t.processed ? ", processed" : "") + ")";
}

std::string ExactCoverage(const PairResult& r) {
  return "exact on " + std::to_string(r.kld_exact.count) + " of " +
         std::to_string(r.summary.compared) + " positions";
}

std::string IdentityBasis(const PairResult& r) {
  const digest::StreamSummary& s = r.summary;
  if (s.compared == 0) return "none";
  if (s.not_comparable_rows == s.compared) return "not comparable (full rows vs returned top-k)";
  if (s.not_comparable_rows > 0) {
    return "mixed (" + std::to_string(s.not_comparable_rows) + " positions not comparable)";
  }
  if (r.returned_top_k.any()) return ReturnedTopKName(r.returned_top_k);
  return "full rows";
}

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

Result<StreamIdentity> ScanStreamIdentity(RunSource& source, std::string_view run) {
  StreamIdentity out;
  ORCH_RETURN_IF_ERROR(source.ScanRecords(run, 0, [&out](const digest::PositionRecord& r) {
    out.hash = HashRecord(out.hash, r);
    ++out.length;
    return true;
  }));
  return out;
}

}  // namespace orch::report
