#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/strings.h"
#include "report/generation_render.h"
#include "report/html_plot.h"
#include "report/render.h"

#include "report/bisect_render.h"
#include "report/tables.h"
#include "report/task_render.h"
#include "report/task_tables.h"

namespace orch::report {
namespace {

// Long values (fingerprint fields, paths, system_info strings) wrap inside their cell, so
// no table is wider than the page.
constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em;max-width:100%}"
    "th,td{border:1px solid #ccc;padding:2px 8px;font-size:13px;text-align:left;"
    "vertical-align:top}td.long{overflow-wrap:anywhere;min-width:12em}"
    "th{background:#eee}svg.plot{display:block;max-width:100%;height:auto}"
    ".partial{color:#c0392b;font-weight:bold}"
    "dl.provenance{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;"
    "font-size:13px}dl.provenance dt{font-weight:bold}dl.provenance dd{margin:0;"
    "overflow-wrap:anywhere}"
    "ul.warnings{background:#fff4e0;border:1px solid #e0a800;padding:.5em 2em;font-size:13px}"
    "ul.warnings li.warning{margin:2px 0}"
    "svg.interval{display:block}svg.interval line{stroke:#2e7d32;stroke-width:2}"
    "svg.interval circle{fill:#6a1b9a}"
    "div.task-strip{display:flex;align-items:flex-start;margin:2px 0}"
    "div.task-strip .strip-label{font-size:13px;flex:0 0 14em}"
    "div.task-strip .strip-cases{display:flex;flex-wrap:wrap;gap:2px}"
    "span.case{display:inline-block;width:12px;height:12px;border:2px solid transparent}"
    "span.case.pass{background:#2e7d32}span.case.fail{background:#c62828}"
    "span.case.none{background:#bbb}span.case.changed{border-color:#ff9800}"
    "span.case.unstable{border-color:#7e57c2}ul.post-mortems{font-size:13px}"
    "table.generated td.generated-text{white-space:pre-wrap;font-family:monospace;"
    "max-width:40em;overflow-wrap:anywhere}\n";

// Cells longer than this may break anywhere; shorter ones keep their words whole.
constexpr std::size_t kLongCell = 40;

void WriteTable(const Table& t, std::ostringstream& out) {
  if (t.rows.empty()) return;
  out << "<h3>" << EscapeHtml(t.title) << "</h3>\n<table>\n<tr>";
  for (const std::string& h : t.header) out << "<th>" << EscapeHtml(h) << "</th>";
  out << "</tr>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const std::string& cell : row) {
      out << (cell.size() > kLongCell ? "<td class=\"long\">" : "<td>") << EscapeHtml(cell)
          << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
}

constexpr int kWhiskerWidth = 220, kWhiskerHeight = 16, kWhiskerPad = 6;

std::string Coordinate(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

// An inline SVG whisker of one rank's 95% interval on [0, top]: a line from lo to hi with
// end caps and a dot at the mean; the mean alone when there is no interval.
std::string Whisker(double mean, const Interval& ci, double top) {
  if (std::isnan(mean)) return "";
  const double span = kWhiskerWidth - 2.0 * kWhiskerPad;
  auto x = [&](double v) { return Coordinate(kWhiskerPad + span * std::clamp(v / top, 0.0, 1.0)); };
  const std::string mid = Coordinate(kWhiskerHeight / 2.0);
  std::ostringstream svg;
  svg << "<svg class=\"interval\" width=\"" << kWhiskerWidth << "\" height=\"" << kWhiskerHeight
      << "\" data-mean=\"" << mean << "\"";
  if (ci.available()) {
    svg << " data-lo=\"" << ci.lo << "\" data-hi=\"" << ci.hi << "\"><line x1=\"" << x(ci.lo)
        << "\" y1=\"" << mid << "\" x2=\"" << x(ci.hi) << "\" y2=\"" << mid << "\"/>";
    for (double end : {ci.lo, ci.hi}) {
      svg << "<line x1=\"" << x(end) << "\" y1=\"3\" x2=\"" << x(end) << "\" y2=\""
          << kWhiskerHeight - 3 << "\"/>";
    }
  } else {
    svg << ">";
  }
  svg << "<circle cx=\"" << x(mean) << "\" cy=\"" << mid << "\" r=\"4\"/><title>"
      << EscapeHtml(ci.method) << "</title></svg>";
  return svg.str();
}

// An attribution table with a column of whiskers on one scale from 0 to the largest upper
// bound (or mean) of its ranks.
void WriteRankedTable(const Table& t, const std::vector<AxisRank>& ranks, double AxisRank::*value,
                      Interval AxisRank::*ci, std::ostringstream& out) {
  if (t.rows.empty()) return;
  double top = 0.0;
  for (const AxisRank& r : ranks) {
    if (!std::isnan(r.*value)) top = std::max(top, r.*value);
    if ((r.*ci).available()) top = std::max(top, (r.*ci).hi);
  }
  if (top <= 0.0) top = 1.0;
  out << "<h3>" << EscapeHtml(t.title) << "</h3>\n<table class=\"ranked\">\n<tr>";
  for (const std::string& h : t.header) out << "<th>" << EscapeHtml(h) << "</th>";
  out << "<th>95% interval (0 to " << EscapeHtml(FormatNumber(top, 4)) << ")</th></tr>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out << "<tr>";
    for (const std::string& cell : t.rows[i]) {
      out << (cell.size() > kLongCell ? "<td class=\"long\">" : "<td>") << EscapeHtml(cell)
          << "</td>";
    }
    out << "<td>" << Whisker(ranks[i].*value, ranks[i].*ci, top) << "</td></tr>\n";
  }
  out << "</table>\n";
}

// The model, baseline coordinate, hosts and engine builds, as a definition list.
void WriteProvenance(const Report& report, std::ostringstream& out) {
  const std::vector<std::string> lines = ProvenanceLines(report);
  if (lines.empty()) return;
  out << "<dl class=\"provenance\">\n";
  for (const std::string& line : lines) {
    const auto colon = line.find(": ");
    out << "<dt>" << EscapeHtml(line.substr(0, colon)) << "</dt><dd>"
        << EscapeHtml(line.substr(colon + 2)) << "</dd>\n";
  }
  out << "</dl>\n";
}

void WriteWarnings(const WorkloadReport& w, std::ostringstream& out) {
  const Table t = WarningTable(w);
  if (t.rows.empty()) return;
  out << "<ul class=\"warnings\">\n";
  for (const auto& row : t.rows) {
    out << "<li class=\"warning\" data-kind=\"" << EscapeHtml(row[1]) << "\"><b>warning</b> ("
        << EscapeHtml(row[0]) << "): " << EscapeHtml(row[2]) << "</li>\n";
  }
  out << "</ul>\n";
}

void WritePlots(const WorkloadReport& w, std::ostringstream& out) {
  const WorkloadScales scales = ScalesOf(w);
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) continue;
    out << "<h3>" << EscapeHtml(c.cell.label) << " against baseline repeat 0</h3>\n";
    WritePlot(w.workload.name, c, scales, out);
  }
}

void WriteWorkload(const WorkloadReport& w, std::ostringstream& out) {
  const bool generate = w.workload.kind == WorkloadKind::kGenerate;
  out << "<h2>Workload " << EscapeHtml(w.workload.name) << " ("
      << (generate ? "generate" : "teacher-forced") << ")</h2>\n<p>" << EscapeHtml(ReferenceLine(w))
      << "</p>\n";
  WriteWarnings(w, out);
  WriteTable(EffectiveTable(w), out);
  WriteTable(RepeatabilityTable(w), out);
  WriteTable(QuorumTable(w), out);
  WriteTable(StreamGroupTable(w), out);
  WriteTable(ConflictTable(w), out);
  WriteTable(generate ? GenerateTable(w) : CellTable(w), out);
  if (generate) {
    WriteTable(GenerationTable(w), out);
    WriteGeneratedTexts(w, out);
  }
  if (!generate) WriteTable(KldTable(w), out);
  WritePlots(w, out);
  if (!generate) {
    WriteTable(FlipTable(w, kMaxListedFlips), out);
    WriteTable(ClusterTable(w, kMaxListedClusters), out);
  }
  WriteTable(FingerprintTable(w), out);
}

void WriteTask(const TaskWorkloadReport& t, std::ostringstream& out) {
  out << "<h2>Task " << EscapeHtml(t.name) << (t.multiple_choice ? " (multiple choice)" : "")
      << "</h2>\n";
  if (!t.error.empty()) {
    out << "<p class=\"partial\">" << EscapeHtml(t.error) << "</p>\n";
    return;
  }
  WriteTable(TaskPassRateTable(t), out);
  out << TaskStripsHtml(t);
  WriteTable(TaskChangeTable(t), out);
  WriteTable(TaskUnstableTable(t), out);
  WriteTable(TaskChoiceTable(t), out);
}

}  // namespace

std::string RenderHtml(const Report& report) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<title>orch report: " << EscapeHtml(report.experiment) << "</title>\n<style>\n"
      << kStyle << "</style>\n</head>\n<body>\n<h1>orch report: " << EscapeHtml(report.experiment)
      << "</h1>\n<p" << (report.partial ? " class=\"partial\"" : "") << ">"
      << EscapeHtml(StatusLine(report)) << "</p>\n";
  WriteProvenance(report, out);
  for (const WorkloadReport& w : report.workloads) WriteWorkload(w, out);
  for (const TaskWorkloadReport& t : report.tasks) WriteTask(t, out);
  WriteRankedTable(AttributionTable(report), report.by_kld, &AxisRank::kld_mean,
                   &AxisRank::kld_ci95, out);
  WriteRankedTable(Top1AttributionTable(report), report.by_top1, &AxisRank::top1_disagreement,
                   &AxisRank::top1_ci95, out);
  WriteRankedTable(ReturnedTopKAttributionTable(report), report.by_kld_returned_top_k,
                   &AxisRank::kld_mean, &AxisRank::kld_ci95, out);
  WriteTable(OutcomeAttributionTable(report), out);
  if (report.bisect) {
    out << "<h2>bisection</h2>\n";
    for (const std::string& line : BisectVerdictLines(*report.bisect))
      out << "<p>" << EscapeHtml(line) << "</p>\n";
    WriteTable(BisectAxisTable(*report.bisect), out);
    WriteTable(BisectWalkTable(*report.bisect), out);
    WriteTable(BisectCellTable(*report.bisect), out);
    if (!report.bisect->tasks.empty()) WriteTable(BisectTaskTable(*report.bisect), out);
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace orch::report
