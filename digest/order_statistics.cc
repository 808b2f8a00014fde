#include "digest/order_statistics.h"

#include <algorithm>
#include <cstddef>

#include "base/check.h"

namespace orch::digest {

double SortedMedian(std::span<const double> sorted) {
  ORCH_CHECK(!sorted.empty()) << "median of no values";
  const std::size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  return 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double SortedPercentile(std::span<const double> sorted, double fraction) {
  ORCH_CHECK(!sorted.empty()) << "percentile of no values";
  if (fraction <= 0.0) return sorted.front();
  if (fraction >= 1.0) return sorted.back();
  const double rank = fraction * static_cast<double>(sorted.size() - 1);
  const auto low = static_cast<std::size_t>(rank);
  const double weight = rank - static_cast<double>(low);
  if (weight == 0.0) return sorted[low];  // also keeps 0 * inf out
  const std::size_t high = std::min(low + 1, sorted.size() - 1);
  return (1.0 - weight) * sorted[low] + weight * sorted[high];
}

}  // namespace orch::digest
