#include <algorithm>
#include <sstream>

#include "report/render.h"

#include "report/bisect_render.h"
#include "fingerprint/flatten.h"
#include "report/generation_render.h"
#include "report/tables.h"
#include "report/task_tables.h"

namespace orch::report {
namespace {

constexpr std::size_t kFlipsShown = 10;
constexpr std::size_t kClustersShown = 10;

// Display width in code points (UTF-8 continuation bytes do not count).
std::size_t Width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The first `width` code points of `s`, the last replaced by "…" when `s` is longer.
std::string Truncate(const std::string& s, std::size_t width) {
  if (Width(s) <= width) return s;
  std::string out;
  std::size_t points = 0;
  for (char c : s) {
    const bool starts = (c & 0xC0) != 0x80;
    if (starts && ++points == width) break;
    out += c;
  }
  return out + "…";
}

// `line` wrapped at spaces to `width`, continuation lines indented; a word longer than a
// line is truncated with "…".
void WriteWrapped(const std::string& line, std::size_t width, std::ostringstream& out) {
  const std::string indent = "    ";
  std::string current;
  std::size_t start = 0;
  while (start <= line.size()) {
    std::size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    const std::string word = line.substr(start, end - start);
    const std::string joined = current.empty() ? word : current + " " + word;
    if (Width(joined) <= width || current.empty() || current == indent) {
      current = joined;
    } else {
      out << Truncate(current, width) << "\n";
      current = indent + word;
    }
    start = end + 1;
  }
  out << Truncate(current, width) << "\n";
}

// `cell` in lines of at most `width` code points, broken at spaces; a word longer than
// a line is cut with "…".
std::vector<std::string> CellLines(const std::string& cell, std::size_t width) {
  std::vector<std::string> lines;
  std::string current;
  std::size_t start = 0;
  while (start <= cell.size()) {
    std::size_t end = cell.find(' ', start);
    if (end == std::string::npos) end = cell.size();
    const std::string word = cell.substr(start, end - start);
    const std::string joined = current.empty() ? word : current + " " + word;
    if (Width(joined) <= width || current.empty()) {
      current = joined;
    } else {
      lines.push_back(Truncate(current, width));
      current = word;
    }
    start = end + 1;
  }
  lines.push_back(Truncate(current, width));
  return lines;
}

// Columns narrower than this are not squeezed to fit a group: they start a new one.
constexpr std::size_t kMinSqueezed = 24;

// The columns of `t` after the first, in groups that fit `width` with the first column
// repeated in each. A column that does not fit whole is squeezed into the room left when
// that is at least kMinSqueezed (its cells then wrap), else starts the next group; a
// column wider than a line alone is capped.
std::vector<std::vector<std::size_t>> ColumnGroups(std::vector<std::size_t>& widths,
                                                   std::size_t width) {
  const std::size_t line = width > 2 ? width - 2 : 1;  // after the indent
  widths[0] = std::min(widths[0], std::max<std::size_t>(1, line / 3));
  const std::size_t room = line > widths[0] + 2 ? line - widths[0] - 2 : 1;
  std::vector<std::vector<std::size_t>> groups;
  std::size_t used = 0;
  for (std::size_t i = 1; i < widths.size(); ++i) {
    widths[i] = std::min(widths[i], room);
    const std::size_t gap = groups.empty() || groups.back().empty() ? 0 : 2;
    const std::size_t left = !groups.empty() && room > used + gap ? room - used - gap : 0;
    if (groups.empty() || (widths[i] > left && left < kMinSqueezed)) {
      groups.push_back({});
      used = widths[i];
    } else {
      widths[i] = std::min(widths[i], left);
      used += gap + widths[i];
    }
    groups.back().push_back(i);
  }
  if (groups.empty()) groups.push_back({});
  return groups;
}

// One row of a column group: as many lines as its tallest wrapped cell.
void WriteRow(const std::vector<std::string>& row, const std::vector<std::size_t>& group,
              const std::vector<std::size_t>& widths, std::ostringstream& out) {
  std::vector<std::size_t> columns{0};
  columns.insert(columns.end(), group.begin(), group.end());
  std::vector<std::vector<std::string>> cells;
  std::size_t height = 1;
  for (std::size_t i : columns) {
    cells.push_back(CellLines(row[i], widths[i]));
    height = std::max(height, cells.back().size());
  }
  for (std::size_t k = 0; k < height; ++k) {
    std::string line;
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const std::string cell = k < cells[j].size() ? cells[j][k] : "";
      line += cell;
      if (j + 1 < columns.size()) line += std::string(widths[columns[j]] - Width(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << "  " << line << "\n";
  }
}

void WriteTable(const Table& t, std::size_t width, std::ostringstream& out) {
  if (t.rows.empty()) return;
  std::vector<std::size_t> widths(t.header.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  };
  measure(t.header);
  for (const auto& row : t.rows) measure(row);
  const std::vector<std::vector<std::size_t>> groups = ColumnGroups(widths, width);
  out << "\n";
  WriteWrapped(t.title, width, out);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) out << "\n";
    WriteRow(t.header, groups[g], widths, out);
    for (const auto& row : t.rows) WriteRow(row, groups[g], widths, out);
  }
}

std::string Stream(const HostRun& r) {
  if (!r.note.empty()) return "not compared: " + r.note;
  return r.same_stream ? "bit-identical" : "differs";
}

// A fingerprint value for a table cell: long values (build strings, device lists) are
// cut, so that one field never makes every row of its table wide; JSON keeps them whole.
std::string Cell(const std::string& value) {
  constexpr std::size_t kWidest = 60;
  if (Width(value) <= kWidest) return value;
  std::string out;
  std::size_t width = 0;
  for (char c : value) {
    if ((c & 0xC0) != 0x80 && ++width > kWidest - 3) break;
    out += c;
  }
  return out + "...";
}

std::string OrDash(const std::string& v) { return v.empty() ? std::string("-") : v; }

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + OrDash(n);
  return out;
}

// "class fc-1 (hosts fp-a, fp-b)" or "host fp-a (class unknown)".
std::string SideText(const std::string& klass, const std::vector<std::string>& hosts) {
  if (klass.empty()) return "host " + Joined(hosts) + " (class unknown)";
  return "class " + klass + " (" + (hosts.size() == 1 ? "host " : "hosts ") + Joined(hosts) + ")";
}

Table HostRunTable(const HostPair& pair) {
  Table t{"Runs (each against its job's reference run)",
          {"job", "cell", "workload", "repeat", "reference run", "run", "contributor", "stream",
           "first difference", "KLD mean [95% CI] n (method)", "top-1 agreement [95% CI] n"},
          {}};
  for (const HostRun& r : pair.runs) {
    const bool compared = r.note.empty();
    std::string kld = "-";
    if (compared && r.kld_method != "none") {
      kld = FormatEstimate(r.kld_mean, r.kld_n, r.kld_ci95, FormatKld) + " (" + r.kld_method + ")";
    }
    t.rows.push_back({r.job.id, r.job.cell, r.job.workload, std::to_string(r.job.repeat),
                      r.reference.run_id, r.run.run_id, r.run.contributor, Stream(r),
                      r.first_difference ? std::to_string(*r.first_difference) : "-", kld,
                      compared ? FormatEstimate(r.top1_estimate.mean, r.top1_estimate.n,
                                                r.top1_estimate.ci95, FormatPercent)
                               : "-"});
  }
  return t;
}

Table HostDifferenceTable(const HostPair& pair) {
  Table t{"Fingerprint differences (once per pair of hosts)",
          {"reference host", "other host", "fingerprint", "group", "field", "reference", "other"},
          {}};
  for (const HostDifference& d : pair.differences) {
    const std::string a = OrDash(d.reference_host), b = OrDash(d.other_host);
    for (const FingerprintComparison& f : d.fingerprints) {
      if (f.same || (f.reference_id.empty() && f.other_id.empty())) continue;
      if (!f.note.empty()) {
        t.rows.push_back({a, b, f.kind, "-", "-", Cell(f.note), ""});
        continue;
      }
      for (const fingerprint::FieldDifference& diff : f.differences) {
        t.rows.push_back({a, b, f.kind, fingerprint::DiffGroupName(diff.group), diff.field,
                          Cell(fingerprint::DisplayValue(diff.a)),
                          Cell(fingerprint::DisplayValue(diff.b))});
      }
    }
  }
  return t;
}

// One task workload: its pass rates and outcome changes, the post-mortems, the cases the
// baseline flips on, and the multiple-choice picks.
void WriteTaskText(const TaskWorkloadReport& t, std::size_t width, std::ostringstream& out) {
  out << "\n";
  WriteWrapped("== task " + t.name + (t.multiple_choice ? " (multiple choice)" : "") + " ==", width,
               out);
  if (!t.error.empty()) {
    WriteWrapped("error: " + t.error, width, out);
    return;
  }
  WriteTable(TaskPassRateTable(t), width, out);
  WriteTable(TaskChangeTable(t), width, out);
  WriteTable(TaskUnstableTable(t), width, out);
  WriteTable(TaskChoiceTable(t), width, out);
}

}  // namespace

std::string RenderHostText(const HostReport& report, const TextOptions& options) {
  const std::size_t width = options.width;
  std::ostringstream out;
  std::string head = "experiment " + report.experiment + ": " + std::to_string(report.jobs_listed) +
                     " of " + std::to_string(report.jobs_total) +
                     " jobs ran on more than one host or fingerprint class";
  if (!report.pairs.empty()) {
    head += "; their runs differ from the reference in " + std::to_string(report.pairs.size()) +
            (report.pairs.size() == 1 ? " way" : " ways");
  }
  WriteWrapped(head, width, out);
  for (const HostPair& pair : report.pairs) {
    out << "\n";
    WriteWrapped("== " + SideText(pair.reference_class, pair.reference_hosts) + " vs " +
                     SideText(pair.other_class, pair.other_hosts) + ": " +
                     std::to_string(pair.runs.size()) +
                     (pair.runs.size() == 1 ? " run, " : " runs, ") +
                     std::to_string(pair.bit_identical()) + " bit-identical ==",
                 width, out);
    WriteTable(HostDifferenceTable(pair), width, out);
    WriteTable(HostRunTable(pair), width, out);
  }
  if (!report.pairs.empty()) {
    out << "\n";
    WriteWrapped(
        "orch bisect REFERENCE_RUN RUN compares two of these runs and says what their "
        "hosts add; of two cells, it finds the axes that explain them (docs/bisect.md)",
        width, out);
  }
  return out.str();
}

std::string RenderOriginText(const BisectOrigin& origin, std::optional<double> total_kld,
                             const TextOptions& options) {
  std::ostringstream out;
  WriteWrapped("== A and B, as the store has them ==", options.width, out);
  for (const std::string& line : BisectOriginLines(origin, total_kld)) {
    WriteWrapped(line, options.width, out);
  }
  return out.str();
}

std::string RenderBisectText(const BisectReport& report, const TextOptions& options,
                             const BisectOrigin* origin) {
  std::ostringstream out;
  WriteWrapped("== bisection ==", options.width, out);
  for (const std::string& line : BisectVerdictLines(report)) WriteWrapped(line, options.width, out);
  if (origin != nullptr) out << "\n" << RenderOriginText(*origin, MeasuredTotal(report), options);
  WriteTable(BisectAxisTable(report), options.width, out);
  WriteTable(BisectWalkTable(report), options.width, out);
  WriteTable(BisectCellTable(report), options.width, out);
  if (!report.tasks.empty()) WriteTable(BisectTaskTable(report), options.width, out);
  return out.str();
}

std::string RenderText(const Report& report, const TextOptions& options) {
  const std::size_t width = options.width;
  std::ostringstream out;
  // The status line's parts (" -- PARTIAL REPORT: ...") each on a line of their own.
  const std::string status = StatusLine(report);
  const auto dashes = status.find(" -- ");
  WriteWrapped(status.substr(0, dashes), width, out);
  if (dashes != std::string::npos) WriteWrapped(status.substr(dashes + 4), width, out);
  for (const std::string& line : ProvenanceLines(report)) WriteWrapped(line, width, out);
  for (const WorkloadReport& w : report.workloads) {
    const bool generate = w.workload.kind == WorkloadKind::kGenerate;
    out << "\n";
    WriteWrapped("== workload " + w.workload.name + " (" +
                     (generate ? "generate" : "teacher-forced") + ") ==",
                 width, out);
    WriteWrapped(ReferenceLine(w), width, out);
    WriteTable(WarningTable(w), width, out);
    WriteTable(EffectiveTable(w), width, out);
    WriteTable(RepeatabilityTable(w), width, out);
    WriteTable(QuorumTable(w), width, out);
    WriteTable(StreamGroupTable(w), width, out);
    WriteTable(ConflictTable(w), width, out);
    WriteTable(generate ? GenerateTable(w) : CellTable(w), width, out);
    if (generate) {
      WriteTable(GenerationTable(w), width, out);
      WriteTable(GeneratedTextTable(w), width, out);
    }
    if (!generate) {
      WriteTable(KldTable(w), width, out);
      WriteTable(FlipTable(w, kFlipsShown), width, out);
      WriteTable(ClusterTable(w, kClustersShown), width, out);
    }
    WriteTable(FingerprintTable(w), width, out);
  }
  for (const TaskWorkloadReport& t : report.tasks) WriteTaskText(t, width, out);
  WriteTable(AttributionTable(report), width, out);
  WriteTable(Top1AttributionTable(report), width, out);
  WriteTable(ReturnedTopKAttributionTable(report), width, out);
  WriteTable(OutcomeAttributionTable(report), width, out);
  if (report.bisect) out << "\n" << RenderBisectText(*report.bisect, options);
  return out.str();
}

}  // namespace orch::report
