#include "report/html_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace orch::report {
namespace {

constexpr int kWidth = 960;
constexpr int kHeight = 314;
constexpr int kLeft = 80;
constexpr int kInnerWidth = kWidth - kLeft - 10;
constexpr int kFlipTop = 34, kFlipHeight = 12;       // the flip strip
constexpr int kKldTop = 50, kKldHeight = 150;        // the KLD frame
constexpr int kMarginTop = 212, kMarginHeight = 40;  // the margin track
constexpr int kAxisY = kMarginTop + kMarginHeight + 16;
constexpr const char* kBoundColour = "#3b6ea5";
constexpr const char* kExactColour = "#e67e22";
constexpr const char* kReturnedColour = "#2e8b57";

bool HasAny(const std::vector<double>& series) {
  return std::any_of(series.begin(), series.end(), [](double v) { return std::isfinite(v); });
}
constexpr const char* kFlipColour = "#c0392b";
constexpr const char* kNearTieColour = "#d4a017";
constexpr const char* kMarginColour = "#9aa5b1";

std::string F(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

std::string G(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

struct Bins {
  double width;  // pixels per bin
  std::size_t count;
  double X(std::size_t i) const { return kLeft + width * static_cast<double>(i); }
};

// The plot's bins on the workload's shared x range of `positions`.
Bins BinsOf(const PositionPlot& plot, std::uint64_t positions) {
  const double per_position =
      static_cast<double>(kInnerWidth) / static_cast<double>(std::max<std::uint64_t>(positions, 1));
  return {per_position * static_cast<double>(plot.bin_width), plot.max_kld.size()};
}

void Rect(std::ostringstream& out, double x, double y, double w, double h, const char* fill,
          const char* cls = nullptr) {
  out << "<rect" << (cls ? std::string(" class=\"") + cls + "\"" : "") << " x=\"" << F(x)
      << "\" y=\"" << F(y) << "\" width=\"" << F(w) << "\" height=\"" << F(h) << "\" fill=\""
      << fill << "\"/>";
}

void Text(std::ostringstream& out, double x, double y, const std::string& text, const char* anchor,
          const char* cls = "label") {
  out << "<text class=\"" << cls << "\" x=\"" << F(x) << "\" y=\"" << F(y) << "\" text-anchor=\""
      << anchor << "\">" << EscapeHtml(text) << "</text>";
}

void WriteLegend(const CellReport& c, const WorkloadScales& s, std::ostringstream& out) {
  const std::uint64_t w = c.result.plot.bin_width;
  const std::string legend = "per bin of " + std::to_string(w) +
                             (w == 1 ? " position" : " positions") +
                             ": blue bars = top-k bound KLD (a lower bound), orange dots = exact "
                             "KLD (both full rows), red = top-1 flips";
  Text(out, kLeft, 13, legend, "start");
  // The second line has room for the server's series, which would run the first past
  // the plot's right edge.
  std::string axis = std::string("KLD axis: ") + s.kld.name() +
                     " scale, nats, shared by every plot of this workload";
  if (HasAny(c.result.plot.max_returned_kld)) {
    axis += "; green squares = KLD over a server's returned top k";
  }
  Text(out, kLeft, 27, axis, "start");
  // Two lines below the axis's "position" label, which they would run into; one line
  // ran past the plot's right edge.
  Text(out, kLeft, kAxisY + 28,
       "lower track: baseline top-1 minus top-2 logit margin, log10 scale (below " +
           G(kMarginFloor) + " on the floor);",
       "start");
  char band[32];
  std::snprintf(band, sizeof band, "%.3g", c.noise_band);
  Text(out, kLeft, kAxisY + 42,
       std::string("amber = near-tie (margin <= noise band ") + band + " logits)", "start");
}

// Tick marks and labels left of a frame whose top is `top` and height `height`.
void WriteTicks(const PlotScale& scale, int top, int height, std::ostringstream& out) {
  for (const Tick& t : scale.ticks) {
    const double y = top + height * (1.0 - scale.Fraction(t.value));
    out << "<line x1=\"" << kLeft - 4 << "\" y1=\"" << F(y) << "\" x2=\"" << kLeft << "\" y2=\""
        << F(y) << "\" stroke=\"#666\"/>";
    Text(out, kLeft - 6, y + 4, t.label, "end", "tick");
  }
}

void WriteKld(const CellReport& c, const PlotScale& scale, std::uint64_t positions,
              std::ostringstream& out) {
  const PositionPlot& plot = c.result.plot;
  const Bins bins = BinsOf(plot, positions);
  const int base = kKldTop + kKldHeight;
  Rect(out, kLeft, kKldTop, kInnerWidth, kKldHeight, "#fafafa");
  for (std::size_t i = 0; i < bins.count; ++i) {
    const double bound = plot.max_bound_kld[i];
    if (std::isfinite(bound) && scale.Fraction(bound) > 0.0) {
      const double h = kKldHeight * scale.Fraction(bound);
      Rect(out, bins.X(i), base - h, std::max(bins.width, 1.0), h, kBoundColour, "bound");
    }
  }
  for (std::size_t i = 0; i < bins.count; ++i) {
    const double exact = plot.max_exact_kld[i];
    if (!std::isfinite(exact)) continue;
    out << "<circle class=\"exact\" cx=\"" << F(bins.X(i) + bins.width / 2) << "\" cy=\""
        << F(base - kKldHeight * scale.Fraction(exact)) << "\" r=\"3.5\" fill=\"" << kExactColour
        << "\"/>";
  }
  for (std::size_t i = 0; i < bins.count; ++i) {
    const double returned = plot.max_returned_kld[i];
    if (!std::isfinite(returned)) continue;
    out << "<rect class=\"returned\" x=\"" << F(bins.X(i) + bins.width / 2 - 3) << "\" y=\""
        << F(base - kKldHeight * scale.Fraction(returned) - 3)
        << "\" width=\"6\" height=\"6\" fill=\"" << kReturnedColour << "\"/>";
  }
  if (c.result.bit_identical()) {
    Text(out, kLeft + kInnerWidth / 2.0, kKldTop + kKldHeight / 2.0 + 6,
         "bit identical to the baseline", "middle", "bit-identical");
  }
  WriteTicks(scale, kKldTop, kKldHeight, out);
  Text(out, 12, kKldTop + kKldHeight / 2.0, "KLD", "start");
}

void WriteFlips(const PositionPlot& plot, std::uint64_t positions, std::ostringstream& out) {
  const Bins bins = BinsOf(plot, positions);
  for (std::size_t i = 0; i < bins.count; ++i) {
    if (plot.flips[i] > 0) {
      Rect(out, bins.X(i), kFlipTop, std::max(bins.width, 1.0), kFlipHeight, kFlipColour, "flip");
    }
  }
  Text(out, kLeft - 6, kFlipTop + 10, "flips", "end");
}

void WriteMargins(const CellReport& c, const PlotScale& scale, std::uint64_t positions,
                  std::ostringstream& out) {
  const PositionPlot& plot = c.result.plot;
  const Bins bins = BinsOf(plot, positions);
  const int base = kMarginTop + kMarginHeight;
  out << "<g class=\"margin-track\">";
  Rect(out, kLeft, kMarginTop, kInnerWidth, kMarginHeight, "#f1f1f1");
  for (std::size_t i = 0; i < bins.count; ++i) {
    const double m = plot.min_margin[i];
    if (!std::isfinite(m)) continue;
    const bool near_tie = m <= c.noise_band;
    const double h = std::max(kMarginHeight * scale.Fraction(m), near_tie ? 2.0 : 0.0);
    Rect(out, bins.X(i), base - h, std::max(bins.width, 1.0), h,
         near_tie ? kNearTieColour : kMarginColour, near_tie ? "near-tie" : "margin");
  }
  const double band = base - kMarginHeight * scale.Fraction(c.noise_band);
  out << "<line class=\"noise-band\" x1=\"" << kLeft << "\" y1=\"" << F(band) << "\" x2=\""
      << kLeft + kInnerWidth << "\" y2=\"" << F(band)
      << "\" stroke=\"#8a6d00\" stroke-dasharray=\"4 3\"/>";
  WriteTicks(PlotScale{scale.log, scale.low, scale.high, {scale.ticks.front(), scale.ticks.back()}},
             kMarginTop, kMarginHeight, out);
  Text(out, 12, kMarginTop + kMarginHeight / 2.0 + 4, "margin", "start");
  out << "</g>";
}

// A generate cell's first differing token: a dashed line across the plot there (its
// figures stop at it: after it the two runs condition on different text).
void WriteDivergence(const CellReport& c, std::uint64_t positions, std::ostringstream& out) {
  if (!c.generation.divergence) return;
  const double x = kLeft + kInnerWidth * static_cast<double>(c.generation.divergence->position) /
                               static_cast<double>(std::max<std::uint64_t>(positions, 1));
  out << "<line class=\"divergence\" x1=\"" << F(x) << "\" y1=\"" << kFlipTop << "\" x2=\"" << F(x)
      << "\" y2=\"" << kMarginTop + kMarginHeight
      << "\" stroke=\"#6a1b9a\" stroke-dasharray=\"5 3\"/>";
  Text(out, x + 3, kKldTop + 12,
       std::string("first divergence (") +
           std::string(DivergenceKindName(c.generation.divergence->kind)) + ")",
       "start", "divergence-label");
}

void WritePositions(std::uint64_t extent, std::ostringstream& out) {
  const double end = static_cast<double>(extent);
  const PlotScale positions = LinearScale(std::max(end, 1.0));
  for (const Tick& t : positions.ticks) {
    if (t.value > end) break;
    const double x = kLeft + kInnerWidth * (end > 0 ? t.value / end : 0.0);
    out << "<line x1=\"" << F(x) << "\" y1=\"" << kMarginTop + kMarginHeight << "\" x2=\"" << F(x)
        << "\" y2=\"" << kMarginTop + kMarginHeight + 4 << "\" stroke=\"#666\"/>";
    // A label centred at the right edge would run past it: the last ones end at their tick.
    Text(out, x, kAxisY, t.label, x > kLeft + kInnerWidth - 30 ? "end" : "middle", "tick");
  }
  Text(out, kLeft + kInnerWidth, kAxisY + 12, "position", "end");
}

void CollectFinite(const std::vector<double>& values, std::vector<double>& out) {
  for (double v : values) {
    if (std::isfinite(v)) out.push_back(v);
  }
}

// The longest stream of any compared pair of the workload, and the end of its last bin.
std::uint64_t PlotPositions(const WorkloadReport& w) {
  std::uint64_t end = 1;
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) continue;
    const PairResult& r = c.result;
    end = std::max({end, r.summary.reference_length, r.summary.other_length,
                    r.plot.bin_width * static_cast<std::uint64_t>(r.plot.max_kld.size())});
  }
  return end;
}

}  // namespace

WorkloadScales ScalesOf(const WorkloadReport& w) {
  std::vector<double> klds, margins;
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) continue;
    CollectFinite(c.result.plot.max_exact_kld, klds);
    CollectFinite(c.result.plot.max_bound_kld, klds);
    CollectFinite(c.result.plot.max_returned_kld, klds);
    CollectFinite(c.result.plot.min_margin, margins);
  }
  const double top = margins.empty() ? 1.0 : *std::max_element(margins.begin(), margins.end());
  return {ChooseScale(klds), LogScale(kMarginFloor, std::max(top, 10.0 * kMarginFloor)),
          PlotPositions(w)};
}

void WritePlot(const std::string& workload, const CellReport& c, const WorkloadScales& scales,
               std::ostringstream& out) {
  out << "<svg class=\"plot\" data-workload=\"" << EscapeHtml(workload) << "\" data-cell=\""
      << EscapeHtml(c.cell.label) << "\" data-scale=\"" << scales.kld.name() << "\" data-kld-low=\""
      << G(scales.kld.low) << "\" data-kld-high=\"" << G(scales.kld.high) << "\" data-positions=\""
      << scales.positions << "\" data-margin-scale=\"" << scales.margin.name() << "\" width=\""
      << kWidth << "\" height=\"" << kHeight << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight
      << "\" role=\"img\" font-size=\"12\" fill=\"#222\">\n<title>" << EscapeHtml(c.cell.label)
      << ": KLD, top-1 flips and baseline margin by position</title>\n";
  WriteLegend(c, scales, out);
  WriteFlips(c.result.plot, scales.positions, out);
  out << "\n";
  WriteKld(c, scales.kld, scales.positions, out);
  out << "\n";
  WriteMargins(c, scales.margin, scales.positions, out);
  WriteDivergence(c, scales.positions, out);
  WritePositions(scales.positions, out);
  out << "\n</svg>\n";
}

}  // namespace orch::report
