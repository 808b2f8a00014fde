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
  if (r.reference) return "reference";
  if (!r.note.empty()) return "not compared: " + r.note;
  return r.same_stream ? "bit-identical" : "differs";
}

Table HostRunTable(const HostJob& job) {
  Table t{"Runs by host (each against the reference run)",
          {"host", "class", "contributor", "agent", "run", "stream", "first difference", "KLD mean",
           "top-1 agreement"},
          {}};
  for (const HostRun& r : job.runs) {
    const bool compared = !r.reference && r.note.empty();
    std::string kld = "-";
    if (compared && r.kld_method != "none") {
      kld = FormatKld(r.kld_mean) + " (" + r.kld_method + ")";
    }
    auto or_dash = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
    t.rows.push_back({or_dash(r.run.host), or_dash(r.run.fingerprint_class), r.run.contributor,
                      r.run.agent_id, r.run.run_id, Stream(r),
                      r.first_difference ? std::to_string(*r.first_difference) : "-", kld,
                      compared ? FormatPercent(r.top1_agreement) : "-"});
  }
  return t;
}

Table HostDifferenceTable(const HostJob& job) {
  Table t{"Fingerprint differences (reference run vs the run on each other host)",
          {"host", "fingerprint", "group", "field", "reference", "this host"},
          {}};
  for (const HostRun& r : job.runs) {
    for (const FingerprintComparison& f : r.fingerprints) {
      if (f.same || (f.reference_id.empty() && f.other_id.empty())) continue;
      if (!f.note.empty()) {
        t.rows.push_back({r.run.host, f.kind, "-", "-", f.note, ""});
        continue;
      }
      for (const fingerprint::FieldDifference& d : f.differences) {
        t.rows.push_back({r.run.host, f.kind, fingerprint::DiffGroupName(d.group), d.field,
                          fingerprint::DisplayValue(d.a), fingerprint::DisplayValue(d.b)});
      }
    }
  }
  return t;
}

}  // namespace

std::string RenderHostText(const HostReport& report) {
  std::ostringstream out;
  out << "experiment " << report.experiment << ": " << report.jobs.size() << " of "
      << report.jobs_total << " jobs ran on more than one host\n";
  for (const HostJob& job : report.jobs) {
    out << "\n== job " << job.job.id << ": " << job.job.cell << ", workload " << job.job.workload
        << ", repeat " << job.job.repeat << " (" << job.hosts << " hosts) ==\n";
    WriteTable(HostRunTable(job), out);
    WriteTable(HostDifferenceTable(job), out);
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
