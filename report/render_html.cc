#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/render.h"
#include "report/tables.h"

namespace orch::report {
namespace {

constexpr int kPlotWidth = 960;
constexpr int kPlotHeight = 200;
constexpr int kMarginLeft = 80;
constexpr int kMarginTop = 24;
constexpr int kFlipBand = 16;  // the strip at the top where flips are marked
constexpr int kInnerWidth = kPlotWidth - kMarginLeft - 10;
constexpr int kInnerHeight = kPlotHeight - kMarginTop - 30;

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Fixed(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

void WriteTable(const Table& t, std::ostringstream& out) {
  if (t.rows.empty()) return;
  out << "<h3>" << Escape(t.title) << "</h3>\n<table>\n<tr>";
  for (const std::string& h : t.header) out << "<th>" << Escape(h) << "</th>";
  out << "</tr>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const std::string& cell : row) out << "<td>" << Escape(cell) << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
}

// A short number for an axis label: 4 significant digits ("2.183", "0.02691", "3.2e-06").
std::string Short(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

// The legend above the frame, the value labels right-aligned left of it and the
// position labels below it.
void WriteAxes(const PositionPlot& plot, double top, std::ostringstream& out) {
  constexpr int kLabelX = kMarginLeft - 6;
  const int bars_top = kMarginTop + kFlipBand, base = kMarginTop + kInnerHeight;
  const std::uint64_t end = plot.bin_width * plot.max_kld.size();
  out << "\n<g font-size=\"12\" fill=\"#222\">"
      << "<text x=\"" << kMarginLeft << "\" y=\"" << kMarginTop - 8
      << "\">blue: largest KLD in each bin of " << plot.bin_width
      << (plot.bin_width == 1 ? " position" : " positions")
      << "; red: bins with top-1 flips</text>\n<g text-anchor=\"end\">"
      << "<text x=\"" << kLabelX << "\" y=\"" << kMarginTop + 9 << "\">flips</text>"
      << "<text x=\"" << kLabelX << "\" y=\"" << bars_top + 10 << "\">" << Short(top)
      << "</text><text x=\"" << kLabelX << "\" y=\"" << (bars_top + base) / 2 + 4
      << "\">KLD</text><text x=\"" << kLabelX << "\" y=\"" << base << "\">0</text>"
      << "<text x=\"" << kMarginLeft + kInnerWidth << "\" y=\"" << base + 16 << "\">" << end
      << "</text></g>\n<text x=\"" << kMarginLeft << "\" y=\"" << base + 16
      << "\" text-anchor=\"middle\">0</text><text x=\"" << kMarginLeft + kInnerWidth / 2
      << "\" y=\"" << base + 16 << "\" text-anchor=\"middle\">position</text></g>\n";
}

// KLD per bin as bars (linear scale, 0 to the largest bin maximum) and a red tick per
// bin with top-1 flips, against position. The svg element carries data-workload and
// data-cell, the names by which a reader (or a test) finds the plot of a cell.
void WritePlot(const std::string& workload, const CellReport& c, std::ostringstream& out) {
  const PositionPlot& plot = c.result.plot;
  const double bins = static_cast<double>(std::max<std::size_t>(plot.max_kld.size(), 1));
  double top = 0.0;
  for (double v : plot.max_kld) {
    if (std::isfinite(v)) top = std::max(top, v);
  }
  const double bar = kInnerWidth / bins;
  const int base = kMarginTop + kInnerHeight;
  out << "<svg class=\"plot\" data-workload=\"" << Escape(workload) << "\" data-cell=\""
      << Escape(c.cell.label) << "\" width=\"" << kPlotWidth << "\" height=\"" << kPlotHeight
      << "\" viewBox=\"0 0 " << kPlotWidth << ' ' << kPlotHeight << "\" role=\"img\">\n"
      << "<title>" << Escape(c.cell.label) << ": KLD and top-1 flips by position</title>\n"
      << "<rect x=\"" << kMarginLeft << "\" y=\"" << kMarginTop << "\" width=\"" << kInnerWidth
      << "\" height=\"" << kInnerHeight << "\" fill=\"#fafafa\" stroke=\"#999\"/>"
      << "<line x1=\"" << kMarginLeft << "\" y1=\"" << kMarginTop + kFlipBand - 2 << "\" x2=\""
      << kMarginLeft + kInnerWidth << "\" y2=\"" << kMarginTop + kFlipBand - 2
      << "\" stroke=\"#ddd\"/>\n";
  for (std::size_t i = 0; i < plot.max_kld.size(); ++i) {
    const double x = kMarginLeft + bar * static_cast<double>(i);
    const double v = plot.max_kld[i];
    if (std::isfinite(v) && top > 0.0) {
      const double h = (kInnerHeight - kFlipBand) * v / top;
      out << "<rect x=\"" << Fixed(x) << "\" y=\"" << Fixed(base - h) << "\" width=\""
          << Fixed(std::max(bar, 1.0)) << "\" height=\"" << Fixed(h) << "\" fill=\"#3b6ea5\"/>";
    }
    if (plot.flips[i] > 0) {
      out << "<rect x=\"" << Fixed(x) << "\" y=\"" << kMarginTop << "\" width=\""
          << Fixed(std::max(bar, 1.0)) << "\" height=\"" << kFlipBand - 4
          << "\" fill=\"#c0392b\"/>";
    }
  }
  WriteAxes(plot, top, out);
  out << "</svg>\n";
}

void WriteWorkload(const WorkloadReport& w, std::ostringstream& out) {
  const bool generate = w.workload.kind == WorkloadKind::kGenerate;
  out << "<h2>Workload " << Escape(w.workload.name) << " ("
      << (generate ? "generate" : "teacher-forced") << ")</h2>\n<p>" << Escape(ReferenceLine(w))
      << "</p>\n";
  WriteTable(RepeatabilityTable(w), out);
  WriteTable(generate ? GenerateTable(w) : CellTable(w), out);
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) continue;
    out << "<h3>" << Escape(c.cell.label) << " against baseline repeat 0</h3>\n";
    WritePlot(w.workload.name, c, out);
  }
  if (!generate) {
    WriteTable(FlipTable(w, kMaxListedFlips), out);
    WriteTable(ClusterTable(w, kMaxListedClusters), out);
  }
  WriteTable(FingerprintTable(w), out);
}

}  // namespace

std::string RenderHtml(const Report& report) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>orch "
         "report: "
      << Escape(report.experiment) << "</title>\n<style>\n"
      << "body{font-family:sans-serif;margin:2em;color:#222}"
      << "table{border-collapse:collapse;margin:.5em 0 1.5em}"
      << "th,td{border:1px solid #ccc;padding:2px 8px;font-size:13px;text-align:left}"
      << "th{background:#eee}svg.plot{display:block;max-width:100%;height:auto}"
      << ".partial{color:#c0392b;font-weight:bold}\n"
      << "</style>\n</head>\n<body>\n<h1>orch report: " << Escape(report.experiment) << "</h1>\n<p"
      << (report.partial ? " class=\"partial\"" : "") << ">" << Escape(StatusLine(report))
      << "</p>\n";
  for (const WorkloadReport& w : report.workloads) WriteWorkload(w, out);
  WriteTable(AttributionTable(report), out);
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace orch::report
