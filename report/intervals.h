// 95% intervals for the report's means and proportions (docs/metrics.md, "Uncertainty").
// Pure: numbers in, numbers out; no clock, no global random state.
//
// - Proportions (top-1 agreement, flip rate): the Wilson score interval.
// - Means over positions (KLD, log PPL ratio): a moving-block bootstrap over positions,
//   because neighbouring positions are correlated. Block length ceil(n^(1/3)) positions,
//   kBootstrapResamples resamples drawn from a fixed seed (kBootstrapSeed) with a
//   generator of our own (splitmix64), so the same values give the same interval on every
//   platform. A resample draws ceil(n / L) blocks with uniform starts, the last cut to
//   make n values; the interval is the 2.5th and 97.5th percentile of the resampled means.
//
// Memory does not grow with positions: BlockSums keeps per-block sums of consecutive
// values, at most kMaxBlocks of them; when a value would make one more, adjacent blocks are
// merged pairwise and the block size doubles. The bootstrap then resamples whole stored
// blocks: its block length is ceil(n^(1/3)) rounded up to a multiple of the stored block
// size (longer blocks only when n > kMaxBlocks; the method string says the length used),
// and at most half the stored blocks (so that two values still resample).
//
// n = 0 gives no mean and no interval; n = 1 gives a mean and no interval (one value says
// nothing about its spread); the method string says why in both cases.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace orch::report {

inline constexpr std::size_t kMaxBlocks = 4096;
inline constexpr int kBootstrapResamples = 1000;
inline constexpr std::uint64_t kBootstrapSeed = 0x6f72636852455054ULL;  // fixed: reproducible
inline constexpr double kZ95 = 1.959963984540054;                       // two-sided 95%

// A 95% interval; lo and hi are NaN when there is none, and method then says why.
struct Interval {
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  // "Wilson", "block bootstrap (block 8, 1000 resamples)", or "no interval: n=1".
  std::string method;
  bool available() const { return lo == lo && hi == hi; }  // neither is NaN
};

// A mean (or proportion, or ratio) with the number of values it rests on.
struct Estimate {
  double mean = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t n = 0;
  Interval ci95;
};

// "no interval: n=0" / "no interval: n=1".
std::string NoIntervalReason(std::uint64_t n);

// The Wilson score interval of successes / n at z; none for n = 0.
Interval WilsonInterval(std::uint64_t successes, std::uint64_t n, double z = kZ95);
Estimate WilsonEstimate(std::uint64_t successes, std::uint64_t n);

// ceil(n^(1/3)), at least 1: the bootstrap's block length rule, in positions.
std::uint64_t BlockLengthRule(std::uint64_t n);

// Sums of consecutive values in blocks of a power-of-two size, at most `max_blocks`.
class BlockSums {
 public:
  explicit BlockSums(std::size_t max_blocks = kMaxBlocks);
  void Add(double value);

  std::uint64_t count() const { return count_; }
  double sum() const { return total_; }
  double mean() const;                                      // NaN when empty
  std::uint64_t block_size() const { return block_size_; }  // values per full block
  std::size_t blocks() const { return sums_.size(); }       // the last may be partial

  // The mean with its moving-block bootstrap interval (see the header comment).
  Estimate Bootstrap(int resamples = kBootstrapResamples,
                     std::uint64_t seed = kBootstrapSeed) const;

 private:
  void Merge();

  std::size_t max_blocks_;
  std::uint64_t block_size_ = 1, count_ = 0;
  double total_ = 0.0;
  std::vector<double> sums_;
  std::vector<std::uint64_t> counts_;
};

// Whether two intervals overlap (either missing counts as overlapping: not separable).
bool Overlap(const Interval& a, const Interval& b);

}  // namespace orch::report
