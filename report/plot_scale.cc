#include "report/plot_scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace orch::report {
namespace {

constexpr double kLogSpan = 100.0;  // two decades

std::string Label(double value, bool log) {
  if (value == 0.0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, log ? "%.0e" : "%.3g", value);
  return buffer;
}

// The smallest of 1, 2, 5 times a power of ten that is at least `raw`.
double NiceStep(double raw) {
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * decade >= raw * (1 - 1e-9)) return m * decade;
  }
  return 10.0 * decade;
}

}  // namespace

PlotScale LogScale(double min_positive, double max) {
  PlotScale s;
  s.log = true;
  const int first = static_cast<int>(std::floor(std::log10(min_positive)));
  int last = static_cast<int>(std::ceil(std::log10(max)));
  if (last == first) ++last;
  s.low = std::pow(10.0, first);
  s.high = std::pow(10.0, last);
  const int every = (last - first + 5) / 6;  // at most about 6 labelled decades
  for (int d = first; d <= last; d += every) s.ticks.push_back({std::pow(10.0, d), ""});
  if (s.ticks.back().value != s.high) s.ticks.push_back({s.high, ""});
  for (Tick& t : s.ticks) t.label = Label(t.value, true);
  return s;
}

double PlotScale::Fraction(double value) const {
  if (std::isnan(value)) return 0.0;
  double f = 0.0;
  if (log) {
    if (value <= 0.0) return 0.0;
    f = (std::log10(value) - std::log10(low)) / (std::log10(high) - std::log10(low));
  } else {
    f = (value - low) / (high - low);
  }
  return std::clamp(f, 0.0, 1.0);
}

PlotScale LinearScale(double max) {
  PlotScale s;
  if (!(max > 0.0) || !std::isfinite(max)) max = 1.0;
  const double step = NiceStep(max / 4.0);
  const int steps = static_cast<int>(std::ceil(max / step - 1e-9));
  s.high = step * steps;
  for (int i = 0; i <= steps; ++i) {
    const double v = step * i;
    s.ticks.push_back({v, Label(v, false)});
  }
  return s;
}

PlotScale ChooseScale(const std::vector<double>& values) {
  double min_positive = INFINITY, max = 0.0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    max = std::max(max, v);
    if (v > 0.0) min_positive = std::min(min_positive, v);
  }
  if (max > 0.0 && max / min_positive > kLogSpan) return LogScale(min_positive, max);
  return LinearScale(max);
}

}  // namespace orch::report
