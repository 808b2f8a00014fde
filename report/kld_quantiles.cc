#include "report/kld_quantiles.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "digest/order_statistics.h"

namespace orch::report {
namespace {

constexpr int kMinDecade = -12;
constexpr int kDecades = 16;  // [1e-12, 1e4)
constexpr std::size_t kBinCount = kDecades * kBinsPerDecade + 2;

std::size_t BinOf(double kld) {
  if (!(kld >= 1e-12)) return 0;
  double index = (std::log10(kld) - kMinDecade) * kBinsPerDecade;
  if (index >= kDecades * kBinsPerDecade) return kBinCount - 1;
  return 1 + static_cast<std::size_t>(index);
}

// The geometric middle of a bin; bin 0 stands for 0, the last bin for 1e4.
double BinValue(std::size_t bin) {
  if (bin == 0) return 0.0;
  if (bin == kBinCount - 1) return 1e4;
  double lower = kMinDecade + static_cast<double>(bin - 1) / kBinsPerDecade;
  return std::pow(10.0, lower + 0.5 / kBinsPerDecade);
}

}  // namespace

void KldQuantiles::Add(double kld) {
  ++count_;
  if (bins_.empty()) {
    exact_.push_back(kld);
    if (exact_.size() > kExactQuantileLimit) MoveToHistogram();
    return;
  }
  AddToHistogram(kld);
}

void KldQuantiles::MoveToHistogram() {
  bins_.assign(kBinCount, 0);
  for (double v : exact_) AddToHistogram(v);
  exact_.clear();
  exact_.shrink_to_fit();
}

void KldQuantiles::AddToHistogram(double kld) { ++bins_[BinOf(kld)]; }

KldQuantiles::Quantiles KldQuantiles::Compute() const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (count_ == 0) return {nan, nan};
  if (!bins_.empty()) return {HistogramQuantile(0.5), HistogramQuantile(0.99)};
  std::vector<double> sorted = exact_;
  std::sort(sorted.begin(), sorted.end());
  return {digest::SortedMedian(sorted), digest::SortedPercentile(sorted, 0.99)};
}

double KldQuantiles::HistogramQuantile(double fraction) const {
  const double rank = fraction * static_cast<double>(count_ - 1);
  std::uint64_t seen = 0;
  for (std::size_t bin = 0; bin < bins_.size(); ++bin) {
    seen += bins_[bin];
    if (static_cast<double>(seen) > rank) return BinValue(bin);
  }
  return BinValue(bins_.size() - 1);
}

}  // namespace orch::report
