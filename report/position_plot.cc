#include "report/position_plot.h"

#include <algorithm>
#include <cmath>

namespace orch::report {
namespace {

constexpr double kPlotNaN = std::numeric_limits<double>::quiet_NaN();

// The larger (or, with `smaller`, the smaller) of two values, NaN meaning "none".
double Pick(double a, double b, bool smaller) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return smaller ? std::min(a, b) : std::max(a, b);
}

template <typename T, typename Merge>
void Halve(std::vector<T>& bins, T empty, Merge merge) {
  const std::size_t half = (bins.size() + 1) / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const T b = 2 * i + 1 < bins.size() ? bins[2 * i + 1] : empty;
    bins[i] = merge(bins[2 * i], b);
  }
  bins.resize(half);
}

void HalveResolution(PositionPlot& plot) {
  auto larger = [](double a, double b) { return Pick(a, b, false); };
  Halve(plot.max_kld, kPlotNaN, larger);
  Halve(plot.max_exact_kld, kPlotNaN, larger);
  Halve(plot.max_bound_kld, kPlotNaN, larger);
  Halve(plot.max_returned_kld, kPlotNaN, larger);
  Halve(plot.min_margin, kPlotNaN, [](double a, double b) { return Pick(a, b, true); });
  Halve(plot.flips, 0u, [](std::uint32_t a, std::uint32_t b) { return a + b; });
  plot.bin_width *= 2;
}

void Grow(PositionPlot& plot, std::size_t bins) {
  if (plot.max_kld.size() >= bins) return;
  plot.max_kld.resize(bins, kPlotNaN);
  plot.max_exact_kld.resize(bins, kPlotNaN);
  plot.max_bound_kld.resize(bins, kPlotNaN);
  plot.max_returned_kld.resize(bins, kPlotNaN);
  plot.min_margin.resize(bins, kPlotNaN);
  plot.flips.resize(bins, 0);
}

}  // namespace

void AddToPlot(PositionPlot& plot, const PlotPoint& point) {
  while (point.position / plot.bin_width >= kPlotBins) HalveResolution(plot);
  const std::size_t bin = point.position / plot.bin_width;
  Grow(plot, bin + 1);
  if (!std::isnan(point.kld)) {
    if (point.returned) {
      plot.max_returned_kld[bin] = Pick(plot.max_returned_kld[bin], point.kld, false);
    } else {
      plot.max_kld[bin] = Pick(plot.max_kld[bin], point.kld, false);
      double& series = point.exact ? plot.max_exact_kld[bin] : plot.max_bound_kld[bin];
      series = Pick(series, point.kld, false);
    }
  }
  plot.min_margin[bin] = Pick(plot.min_margin[bin], point.margin, true);
  if (point.flip) ++plot.flips[bin];
}

}  // namespace orch::report
