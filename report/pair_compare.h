// One run against a reference run of the same workload, streamed position by position:
// the digest library's per-position metrics (digest/position_compare.h) aggregated as
// digest::Summarize defines them (docs/metrics.md), plus what a report adds: the top-1
// flips with the reference's top-1 minus top-2 logit margin and the input tokens before
// them, flip clusters, the KLD statistics of exact and top-k bound positions apart, a
// binned position plot (report/position_plot.h), a hash of each stream (for
// repeatability) and, for generate workloads, the generated tokens' common prefix.
//
// Memory does not depend on the number of positions: flips and clusters are listed up to
// a cap (their totals are always counted), the plot has at most kPlotBins bins, and the
// KLD order statistics use report/kld_quantiles.h, the intervals of the means
// report/intervals.h (at most kMaxBlocks block sums per mean).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "digest/stream_compare.h"
#include "report/position_plot.h"
#include "report/run_identity.h"
#include "report/run_source.h"
#include "report/summary_accumulator.h"

namespace orch::report {

// Flips whose positions are at most kClusterGap apart belong to one cluster.
inline constexpr std::uint64_t kClusterGap = 8;
inline constexpr std::size_t kMaxListedFlips = 1000;
inline constexpr std::size_t kMaxListedClusters = 200;
// Input tokens kept before each listed flip (the flip's own position included).
inline constexpr std::size_t kFlipContext = 4;

// A position where the two sides' argmax differ.
struct Flip {
  std::uint64_t position = 0;
  std::int32_t reference_token = -1;  // the reference's argmax
  std::int32_t other_token = -1;
  // The reference's top-1 minus top-2 logit; NaN when its digest holds one token only.
  double margin = std::numeric_limits<double>::quiet_NaN();
  double abs_top1_logit_delta = std::numeric_limits<double>::quiet_NaN();
  bool near_tie = false;  // set by the report against its noise band (report.h)
  // The reference's input tokens at positions position-kFlipContext+1 .. position, oldest
  // first (fewer at the start of the stream): the text the flipped prediction follows.
  std::vector<std::int32_t> context;
};

struct FlipCluster {
  std::uint64_t first = 0;  // positions of its first and last flip
  std::uint64_t last = 0;
  std::uint64_t flips = 0;
};

// A differing pair of generated tokens, with what each side's digest said at that
// position: its argmax and its top-1 minus top-2 logit margin (NaN when its digest holds
// one token only). Equal argmaxes mean the sampled draws differed, not the top-1.
struct TokenDifference {
  std::uint64_t index = 0;  // 0-based index into the generated tokens
  std::int32_t reference_token = -1;
  std::int32_t other_token = -1;
  std::uint64_t position = 0;  // the stream position of the differing tokens
  std::int32_t reference_argmax = -1;
  std::int32_t other_argmax = -1;
  double reference_margin = std::numeric_limits<double>::quiet_NaN();
  double other_margin = std::numeric_limits<double>::quiet_NaN();
};

// What a pair's top-k-only rows (a server's returned log-probabilities) were, so that
// every figure resting on them can say so (docs/metrics.md, "Top-k-only rows").
struct ReturnedTopK {
  std::uint64_t positions = 0;  // compared positions where a side is top-k-only
  std::uint64_t reference_rows = 0, other_rows = 0;  // top-k-only rows of each side
  std::uint32_t k_min = 0, k_max = 0;                // returned list lengths, over both sides
  bool processed = false;  // some row's values are after the server's transforms
  bool any() const { return positions > 0; }
  // Both sides top-k-only at every compared position (else a full row meets a top-k one).
  bool both_sides(std::uint64_t compared) const {
    return reference_rows >= compared && other_rows >= compared;
  }
};

// "returned top-k (K=20)", "returned top-k (K=5..20, processed)"; empty when none.
std::string ReturnedTopKName(const ReturnedTopK& top_k);

struct PairResult {
  digest::StreamSummary summary;  // as digest::Summarize defines it
  bool kld_quantiles_approximate = false;
  KldSummary kld_exact;  // positions with both full rows
  KldSummary kld_bound;  // positions with a top-k bound only
  // Positions with a top-k-only side: a different basis, never averaged with the two above.
  KldSummary kld_returned_top_k;
  ReturnedTopK returned_top_k;
  // Top-1 agreement, flip rate and PPL ratio with n and 95% intervals (report/intervals.h).
  PairEstimates estimates;
  std::uint64_t flip_count = 0;
  std::vector<Flip> flips;  // the first kMaxListedFlips, in position order
  std::uint64_t cluster_count = 0;
  std::vector<FlipCluster> clusters;  // the first kMaxListedClusters
  PositionPlot plot;
  std::uint64_t reference_hash = 0;  // of the whole stream: row hashes and tokens
  std::uint64_t other_hash = 0;
  // Generated tokens (records with output_token >= 0), for generate workloads.
  std::uint64_t reference_generated = 0;
  std::uint64_t other_generated = 0;
  std::uint64_t generated_common_prefix = 0;
  std::optional<TokenDifference> first_token_difference;
  bool bit_identical() const {
    return reference_hash == other_hash && summary.reference_length == summary.other_length;
  }
};

struct PairOptions {
  // Generate workloads: compare distributions only while both sides generated the same
  // tokens (the position of the first differing token included: its history is shared).
  bool stop_metrics_at_token_divergence = false;
};

// "exact on N of M positions": how many of the compared positions have an exact KLD (both
// full rows kept), for every KLD figure that rests on them.
std::string ExactCoverage(const PairResult& result);

// What the pair's identity figures (bit_identical, first_divergence, common_prefix)
// rest on: "full rows", the returned top-k name (both sides top-k-only), "not comparable
// (full rows vs returned top-k)" when every position pits a full row against a top-k-only
// one, "mixed (N positions not comparable)" when some do, "none" with no position.
std::string IdentityBasis(const PairResult& result);

// Errors: the source's, and the digest library's when the runs are not comparable
// (vocabulary sizes or teacher-forced targets differ), with the position.
Result<PairResult> ComparePair(RunSource& source, std::string_view reference_run,
                               std::string_view other_run, const PairOptions& options);

// The identity of one run's stream, in one scan: the hash and length ComparePair gives
// that run on either side. Errors: the source's.
Result<StreamIdentity> ScanStreamIdentity(RunSource& source, std::string_view run);

}  // namespace orch::report
