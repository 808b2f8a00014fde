#include <algorithm>
#include <sstream>

#include "report/render.h"
#include "report/tables.h"

namespace orch::report {
namespace {

constexpr std::size_t kFlipsShown = 10;
constexpr std::size_t kClustersShown = 10;

// Display width in code points (UTF-8 continuation bytes do not count).
std::size_t Width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

void WriteTable(const Table& t, std::ostringstream& out) {
  if (t.rows.empty()) return;
  std::vector<std::size_t> widths(t.header.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  };
  measure(t.header);
  for (const auto& row : t.rows) measure(row);
  auto write = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Width(row[i]) + 2, ' ');
    }
    out << "  " << line << "\n";
  };
  out << "\n" << t.title << "\n";
  write(t.header);
  for (const auto& row : t.rows) write(row);
}

}  // namespace

std::string RenderText(const Report& report) {
  std::ostringstream out;
  out << StatusLine(report) << "\n";
  for (const std::string& line : ProvenanceLines(report)) out << line << "\n";
  for (const WorkloadReport& w : report.workloads) {
    const bool generate = w.workload.kind == WorkloadKind::kGenerate;
    out << "\n== workload " << w.workload.name << " (" << (generate ? "generate" : "teacher-forced")
        << ") ==\n"
        << ReferenceLine(w) << "\n";
    WriteTable(WarningTable(w), out);
    WriteTable(RepeatabilityTable(w), out);
    WriteTable(QuorumTable(w), out);
    WriteTable(ConflictTable(w), out);
    WriteTable(generate ? GenerateTable(w) : CellTable(w), out);
    if (!generate) {
      WriteTable(KldTable(w), out);
      WriteTable(FlipTable(w, kFlipsShown), out);
      WriteTable(ClusterTable(w, kClustersShown), out);
    }
    WriteTable(FingerprintTable(w), out);
  }
  WriteTable(AttributionTable(report), out);
  return out.str();
}

}  // namespace orch::report
