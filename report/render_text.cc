#include <algorithm>
#include <sstream>

#include "report/render.h"
#include "fingerprint/flatten.h"
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
           "first difference", "KLD mean", "top-1 agreement"},
          {}};
  for (const HostRun& r : pair.runs) {
    const bool compared = r.note.empty();
    std::string kld = "-";
    if (compared && r.kld_method != "none") {
      kld = FormatKld(r.kld_mean) + " (" + r.kld_method + ")";
    }
    t.rows.push_back({r.job.id, r.job.cell, r.job.workload, std::to_string(r.job.repeat),
                      r.reference.run_id, r.run.run_id, r.run.contributor, Stream(r),
                      r.first_difference ? std::to_string(*r.first_difference) : "-", kld,
                      compared ? FormatPercent(r.top1_agreement) : "-"});
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

}  // namespace

std::string RenderHostText(const HostReport& report) {
  std::ostringstream out;
  out << "experiment " << report.experiment << ": " << report.jobs_listed << " of "
      << report.jobs_total << " jobs ran on more than one host or fingerprint class";
  if (!report.pairs.empty()) {
    out << "; their runs differ from the reference in " << report.pairs.size()
        << (report.pairs.size() == 1 ? " way" : " ways");
  }
  out << "\n";
  for (const HostPair& pair : report.pairs) {
    out << "\n== " << SideText(pair.reference_class, pair.reference_hosts) << " vs "
        << SideText(pair.other_class, pair.other_hosts) << ": " << pair.runs.size()
        << (pair.runs.size() == 1 ? " run, " : " runs, ") << pair.bit_identical()
        << " bit-identical ==\n";
    WriteTable(HostDifferenceTable(pair), out);
    WriteTable(HostRunTable(pair), out);
  }
  return out.str();
}

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
    WriteTable(EffectiveTable(w), out);
    WriteTable(RepeatabilityTable(w), out);
    WriteTable(QuorumTable(w), out);
    WriteTable(StreamGroupTable(w), out);
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
  WriteTable(ReturnedTopKAttributionTable(report), out);
  return out.str();
}

}  // namespace orch::report
