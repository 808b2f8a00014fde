// Comparison of two digest streams of one workload, position by position, and
// the aggregates a report prints (docs/metrics.md gives each formula and, where
// one exists, its llama.cpp `llama-perplexity --kl-divergence` counterpart).
//
// Pure: spans in, values out. The spans are borrowed for the duration of the
// call.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "digest/position_compare.h"
#include "digest/row_digest.h"

namespace orch::digest {

// A full logit row captured at `position` (the capture policy's
// full_every/windows).
struct FullRow {
  std::uint64_t position = 0;
  std::span<const float> logits;
};

// One run's digests in position order (index = position) and its captured full
// rows, sorted by strictly increasing position.
struct DigestStream {
  std::span<const RowDigest> digests;
  std::span<const FullRow> full_rows;
};

// Distribution of per-position KL divergences (nats) over the scored positions.
struct KldStats {
  std::uint64_t count = 0;        // positions with a KLD value
  std::uint64_t exact_count = 0;  // of which from full rows
  double mean = std::numeric_limits<double>::quiet_NaN();
  double median = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
};

// Aggregates over the compared positions. Fractions are in [0, 1]; NaN where
// the population is empty.
struct StreamSummary {
  std::uint64_t reference_length = 0;
  std::uint64_t other_length = 0;
  std::uint64_t compared = 0;  // min of the two lengths
  // First compared position whose rows are comparable and differ (hash);
  // empty when none does.
  std::optional<std::uint64_t> first_divergence;
  // Identical positions before the first that is not (differs, or is a full
  // row against a top-k-only row).
  std::uint64_t common_prefix = 0;
  std::uint64_t identical_rows = 0;  // anywhere in the compared range
  // Positions with a full row on one side and a top-k-only row on the other:
  // their identity is "not comparable", neither identical nor different.
  std::uint64_t not_comparable_rows = 0;
  // Positions where a side is top-k-only: their figures rest on returned top-k.
  std::uint64_t returned_top_k_positions = 0;
  std::uint64_t scored = 0;                                          // both rows are distributions
  double top1_agreement = std::numeric_limits<double>::quiet_NaN();  // over compared
  double same_top_p = std::numeric_limits<double>::quiet_NaN();      // over scored
  KldStats kld;  // exact and full-row top-k bound positions (never returned top-k)
  // KldMethod::kReturnedTopK positions only: a different basis, kept apart.
  KldStats returned_kld;
  std::uint64_t target_count = 0;  // scored positions with a target on both sides
  double mean_delta_p = std::numeric_limits<double>::quiet_NaN();
  double rms_delta_p = std::numeric_limits<double>::quiet_NaN();
  double ppl_reference = std::numeric_limits<double>::quiet_NaN();
  double ppl_other = std::numeric_limits<double>::quiet_NaN();
  double ppl_ratio = std::numeric_limits<double>::quiet_NaN();  // PPL(Q) / PPL(P)
  std::uint64_t top1_logit_count = 0;  // positions where |Δlogit| at top-1 is known
  double mean_abs_top1_logit_delta = std::numeric_limits<double>::quiet_NaN();
  double max_abs_top1_logit_delta = std::numeric_limits<double>::quiet_NaN();
};

struct StreamComparison {
  std::vector<PositionComparison> positions;  // one per compared position
  StreamSummary summary;
};

// Compares `reference` (P) with `other` (Q) over their common length. Errors
// (InvalidArgument, with the position): full rows out of order or beyond the
// stream, and everything ComparePosition rejects.
Result<StreamComparison> CompareStreams(const DigestStream& reference, const DigestStream& other);

// The aggregates of per-position comparisons (in position order).
StreamSummary Summarize(std::span<const PositionComparison> positions,
                        std::uint64_t reference_length, std::uint64_t other_length);

}  // namespace orch::digest
