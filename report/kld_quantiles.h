// Median and 99th percentile of per-position KL divergences in bounded memory.
//
// Up to kExactQuantileLimit values are kept and the order statistics are exact, with
// digest/order_statistics.h's definitions (the ones llama.cpp prints). Beyond that the
// values move into a histogram of kBinsPerDecade logarithmic bins per decade over
// [1e-12, 1e4) (plus one bin for values below, zero included, and one above) and the
// statistics come from it: relative error at most 10^(1/kBinsPerDecade) - 1 (about 3.7%),
// flagged as approximate. Memory is bounded either way.
#pragma once

#include <cstdint>
#include <vector>

namespace orch::report {

inline constexpr std::size_t kExactQuantileLimit = std::size_t{1} << 20;
inline constexpr int kBinsPerDecade = 64;

class KldQuantiles {
 public:
  void Add(double kld);
  bool approximate() const { return !bins_.empty(); }
  struct Quantiles {
    double median;
    double p99;
  };
  // NaN when nothing was added.
  Quantiles Compute() const;
  double Median() const { return Compute().median; }
  double P99() const { return Compute().p99; }

 private:
  double HistogramQuantile(double fraction) const;
  void MoveToHistogram();
  void AddToHistogram(double kld);

  std::vector<double> exact_;
  std::vector<std::uint64_t> bins_;  // empty while exact
  std::uint64_t count_ = 0;
};

}  // namespace orch::report
