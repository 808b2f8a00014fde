#include "report/intervals.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace orch::report {
namespace {

constexpr double kIntervalNaN = std::numeric_limits<double>::quiet_NaN();

// splitmix64: small, fast, and the same sequence on every platform.
class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, range): the top 53 bits as a fraction of range (IEEE arithmetic, so
  // the same on every platform; the bias is below 2^-40 for the ranges used here).
  std::uint64_t Below(std::uint64_t range) {
    const double unit = static_cast<double>(Next() >> 11) * 0x1.0p-53;
    return std::min(range - 1, static_cast<std::uint64_t>(unit * static_cast<double>(range)));
  }

 private:
  std::uint64_t state_;
};

// The p-quantile of sorted values, linear between order statistics.
double Quantile(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (h - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

}  // namespace

std::string NoIntervalReason(std::uint64_t n) { return "no interval: n=" + std::to_string(n); }

Interval WilsonInterval(std::uint64_t successes, std::uint64_t n, double z) {
  if (n == 0) return Interval{kIntervalNaN, kIntervalNaN, NoIntervalReason(n)};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(successes) / nn;
  const double z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  // At 0 or n successes the bound is exactly 0 or 1 (not a rounding error away from it).
  const double lo = successes == 0 ? 0.0 : std::max(0.0, centre - half);
  const double hi = successes == n ? 1.0 : std::min(1.0, centre + half);
  return Interval{lo, hi, "Wilson"};
}

Estimate WilsonEstimate(std::uint64_t successes, std::uint64_t n) {
  Estimate e;
  e.n = n;
  if (n > 0) e.mean = static_cast<double>(successes) / static_cast<double>(n);
  e.ci95 = WilsonInterval(successes, n);
  return e;
}

std::uint64_t BlockLengthRule(std::uint64_t n) {
  auto length = static_cast<std::uint64_t>(std::ceil(std::cbrt(static_cast<double>(n))));
  // cbrt of a cube may come out a hair above the integer: take the smallest L with L^3 >= n.
  while (length > 1 && (length - 1) * (length - 1) * (length - 1) >= n) --length;
  return std::max<std::uint64_t>(1, length);
}

BlockSums::BlockSums(std::size_t max_blocks) : max_blocks_(std::max<std::size_t>(2, max_blocks)) {}

void BlockSums::Add(double value) {
  if (sums_.empty() || counts_.back() == block_size_) {
    if (sums_.size() == max_blocks_) Merge();
    if (sums_.empty() || counts_.back() == block_size_) {
      sums_.push_back(0.0);
      counts_.push_back(0);
    }
  }
  sums_.back() += value;
  ++counts_.back();
  ++count_;
  total_ += value;
}

void BlockSums::Merge() {
  std::size_t out = 0;
  for (std::size_t i = 0; i < sums_.size(); i += 2, ++out) {
    sums_[out] = sums_[i] + (i + 1 < sums_.size() ? sums_[i + 1] : 0.0);
    counts_[out] = counts_[i] + (i + 1 < counts_.size() ? counts_[i + 1] : 0);
  }
  sums_.resize(out);
  counts_.resize(out);
  block_size_ *= 2;
}

double BlockSums::mean() const {
  return count_ == 0 ? kIntervalNaN : total_ / static_cast<double>(count_);
}

Estimate BlockSums::Bootstrap(int resamples, std::uint64_t seed) const {
  Estimate e{mean(), count_, {}};
  if (count_ < 2 || resamples < 2) {
    e.ci95.method = NoIntervalReason(count_);
    return e;
  }
  const std::size_t units = sums_.size();
  // Blocks of whole stored units, at most half of them (two values: single units).
  std::uint64_t b = (BlockLengthRule(count_) + block_size_ - 1) / block_size_;
  b = std::clamp<std::uint64_t>(b, 1, std::max<std::size_t>(1, units / 2));
  std::vector<double> prefix_sum(units + 1, 0.0);
  std::vector<std::uint64_t> prefix_count(units + 1, 0);
  for (std::size_t i = 0; i < units; ++i) {
    prefix_sum[i + 1] = prefix_sum[i] + sums_[i];
    prefix_count[i + 1] = prefix_count[i] + counts_[i];
  }
  const std::uint64_t starts = units - b + 1;
  const std::uint64_t draws = (units + b - 1) / b;
  SplitMix rng(seed);
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (double& m : means) {
    double sum = 0.0;
    std::uint64_t n = 0;
    for (std::uint64_t k = 0; k < draws; ++k) {
      // The last block is cut so that a resample is as long as the data.
      const std::uint64_t length = k + 1 < draws ? b : units - k * b;
      const std::uint64_t s = rng.Below(starts);
      sum += prefix_sum[s + length] - prefix_sum[s];
      n += prefix_count[s + length] - prefix_count[s];
    }
    m = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  e.ci95.lo = Quantile(means, 0.025);
  e.ci95.hi = Quantile(means, 0.975);
  e.ci95.method = "block bootstrap (block " + std::to_string(b * block_size_) + ", " +
                  std::to_string(resamples) + " resamples)";
  return e;
}

bool Overlap(const Interval& a, const Interval& b) {
  if (!a.available() || !b.available()) return true;
  return a.lo <= b.hi && b.lo <= a.hi;
}

}  // namespace orch::report
