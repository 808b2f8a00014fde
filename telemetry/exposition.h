// The Prometheus text exposition format, version 0.0.4, written by hand: metric
// families (# HELP, # TYPE, then their samples), label values escaped, histograms as
// cumulative `_bucket{le="..."}` lines ending in `le="+Inf"`, then `_sum` and `_count`.
// Pure: values in, text out. Callers name metrics `orch_...`, with the unit in the name
// (`_seconds`, `_bytes`) and `_total` on counters; the writer checks names and label
// names against the format's grammar (ORCH_CHECK: a bad name is a programming error).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orch::telemetry {

// The content type of the text the writer produces.
inline constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

using Labels = std::vector<std::pair<std::string, std::string>>;

// A histogram with fixed upper bounds (ascending, finite), observed one value at a time.
class Histogram final {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per bucket, not cumulative: counts()[i] values fell in (bounds[i-1], bounds[i]];
  // the last entry counts the values above every bound.
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// Bounds for durations in seconds: 1 ms .. 60 s, and 1 s .. 4 h for whole runs.
std::vector<double> LatencyBoundsSeconds();
std::vector<double> RunDurationBoundsSeconds();

class ExpositionWriter final {
 public:
  // Starts a family: its # HELP and # TYPE lines. Each name once per text.
  void Family(std::string_view name, MetricType type, std::string_view help);
  // One sample of the current family (counter or gauge): NAME{LABELS} VALUE.
  void Sample(std::string_view name, const Labels& labels, double value);
  // A family with one sample, no labels.
  void Single(std::string_view name, MetricType type, std::string_view help, double value);
  // The samples of one histogram series of the current family.
  void HistogramSamples(std::string_view name, const Labels& labels, const Histogram& histogram);

  // The text so far; the writer is empty afterwards.
  std::string Take();

 private:
  void Line(std::string_view name, const Labels& labels, std::string_view extra_label,
            std::string_view extra_value, double value);
  std::string text_;
};

// How the format writes a value: integers without a fraction, "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

}  // namespace orch::telemetry
