#include "telemetry/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/check.h"

namespace orch::telemetry {
namespace {

bool NameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9'); }

// [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, without ':' for labels.
bool ValidName(std::string_view name, bool metric) {
  if (name.empty()) return false;
  auto ok = [metric](char c, bool first) {
    if (metric && c == ':') return true;
    return first ? NameStart(c) : NameChar(c);
  };
  if (!ok(name[0], true)) return false;
  return std::all_of(name.begin() + 1, name.end(), [&](char c) { return ok(c, false); });
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// HELP text escapes backslash and newline; label values also the double quote.
void Escape(std::string_view text, bool quote, std::string& out) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  ORCH_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
}

void Histogram::Observe(double value) {
  auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(at - bounds_.begin())];
  sum_ += value;
  ++count_;
}

std::vector<double> LatencyBoundsSeconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> RunDurationBoundsSeconds() {
  return {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400};
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  ORCH_CHECK(error == std::errc());
  return std::string(buffer, end);
}

void ExpositionWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  ORCH_CHECK(ValidName(name, true));
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  Escape(help, false, text_);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += TypeName(type);
  text_ += '\n';
}

void ExpositionWriter::Sample(std::string_view name, const Labels& labels, double value) {
  Line(name, labels, {}, {}, value);
}

void ExpositionWriter::Single(std::string_view name, MetricType type, std::string_view help,
                              double value) {
  Family(name, type, help);
  Sample(name, {}, value);
}

void ExpositionWriter::HistogramSamples(std::string_view name, const Labels& labels,
                                        const Histogram& histogram) {
  std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < histogram.bounds().size(); ++i) {
    cumulative += histogram.counts()[i];
    Line(bucket, labels, "le", FormatValue(histogram.bounds()[i]), static_cast<double>(cumulative));
  }
  Line(bucket, labels, "le", "+Inf", static_cast<double>(histogram.count()));
  Line(std::string(name) + "_sum", labels, {}, {}, histogram.sum());
  Line(std::string(name) + "_count", labels, {}, {}, static_cast<double>(histogram.count()));
}

void ExpositionWriter::Line(std::string_view name, const Labels& labels,
                            std::string_view extra_label, std::string_view extra_value,
                            double value) {
  ORCH_CHECK(ValidName(name, true));
  text_ += name;
  if (!labels.empty() || !extra_label.empty()) {
    text_ += '{';
    bool first = true;
    auto label = [&](std::string_view key, std::string_view text) {
      ORCH_CHECK(ValidName(key, false));
      if (!first) text_ += ',';
      first = false;
      text_ += key;
      text_ += "=\"";
      Escape(text, true, text_);
      text_ += '"';
    };
    for (const auto& [key, text] : labels) label(key, text);
    if (!extra_label.empty()) label(extra_label, extra_value);
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatValue(value);
  text_ += '\n';
}

std::string ExpositionWriter::Take() {
  std::string out;
  out.swap(text_);
  return out;
}

}  // namespace orch::telemetry
