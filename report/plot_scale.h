// The value axis of the report's plots: one scale shared by every plot of a workload, so
// that bars of two cells compare by height. Pure.
//
// The scale is logarithmic when the positive values span more than two decades (largest /
// smallest positive > 100), else linear from 0. Log scales run from the decade below the
// smallest positive value to the decade above the largest, with a tick per decade (every
// second or third one when there are many); linear scales from 0 to a round value above
// the largest, with 3 to 6 ticks at 1-2-5 steps. Every tick has a label.
#pragma once

#include <string>
#include <vector>

namespace orch::report {

struct Tick {
  double value = 0.0;
  std::string label;  // "0", "0.002", "1e-05"
};

struct PlotScale {
  bool log = false;
  double low = 0.0;         // the value at the bottom of the axis
  double high = 1.0;        // the value at the top
  std::vector<Tick> ticks;  // increasing, low and high included

  // Where `value` sits: 0 at the bottom, 1 at the top, clamped; values <= 0 on a log scale
  // (and NaN) give 0.
  double Fraction(double value) const;
  const char* name() const { return log ? "log" : "linear"; }
};

// The scale for `values` (NaN and infinities are ignored). Without a positive value the
// scale is linear from 0 to 1.
PlotScale ChooseScale(const std::vector<double>& values);

// A linear scale from 0 to a round value at or above `max`.
PlotScale LinearScale(double max);

// A log scale from the decade at or below `min_positive` to the decade at or above `max`
// (at least one decade), a labelled tick per decade (every second or third one when there
// are many). Both must be positive.
PlotScale LogScale(double min_positive, double max);

}  // namespace orch::report
