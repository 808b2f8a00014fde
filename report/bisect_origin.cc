#include "report/bisect_origin.h"

#include "fingerprint/flatten.h"
#include "report/fingerprint_pairs.h"
#include "report/tables.h"

namespace orch::report {
namespace {

// Fields listed per fingerprint before "and N more".
constexpr std::size_t kListedFields = 6;

// A pair of long values from a little before where they start to differ (two paths of
// one tree differ in their middle), each at most kShown characters.
constexpr std::size_t kShown = 48;
std::pair<std::string, std::string> Shorten(const std::string& a, const std::string& b) {
  auto cut = [](std::string text, std::size_t from) {
    if (from > 0) text = "..." + text.substr(from);
    return text.size() <= kShown ? text : text.substr(0, kShown - 3) + "...";
  };
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  const std::size_t from = a.size() <= kShown && b.size() <= kShown ? 0
                           : common > 12                            ? common - 8
                                                                    : 0;
  return {cut(a, from), cut(b, from)};
}

std::string EndLine(const char* name, const char* end, const BisectEnd& e) {
  std::string run = e.run.run_id.empty() ? "job " + e.job_id.substr(0, 12) + " (no finished run)"
                                         : "run " + e.run.run_id;
  std::string host = e.run.host.empty() ? "an unrecorded host" : "host " + e.run.host;
  std::string contributor =
      e.run.contributor.empty() || e.run.contributor == "lab" ? "" : ", from " + e.run.contributor;
  return std::string(name) + " (" + e.given + ", " + end + "): " + run + ", experiment " +
         e.experiment + ", cell " + e.cell + ", workload " + e.workload + ", repeat " +
         std::to_string(e.repeat) + ", on " + host + contributor;
}

std::string Divergence(const HostRun& c) {
  if (!c.note.empty()) return "A and B where they ran: not compared: " + c.note;
  if (c.same_stream) return "A and B where they ran: the same stream, bit for bit";
  std::string kld = c.kld_n == 0 ? "no KLD (no position to compare)"
                                 : "KLD(B, A) " +
                                       FormatEstimate(c.kld_mean, c.kld_n, c.kld_ci95, FormatKld) +
                                       " (" + c.kld_method + ")";
  return "A and B where they ran: " + kld + ", top-1 agreement " +
         FormatEstimate(c.top1_agreement, c.top1_estimate.n, c.top1_estimate.ci95, FormatPercent) +
         (c.first_difference
              ? ", first difference at position " + std::to_string(*c.first_difference)
              : "");
}

std::string Differences(const std::vector<FingerprintComparison>& fingerprints) {
  std::string out;
  for (const FingerprintComparison& f : fingerprints) {
    if (f.same) continue;
    std::string fields;
    if (!f.note.empty()) fields = f.note;
    for (std::size_t i = 0; i < f.differences.size() && i < kListedFields; ++i) {
      const fingerprint::FieldDifference& d = f.differences[i];
      const auto [a, b] = Shorten(fingerprint::DisplayValue(d.a), fingerprint::DisplayValue(d.b));
      fields += (fields.empty() ? "" : ", ") + d.field + " (" + a + " vs " + b + ")";
    }
    if (f.differences.size() > kListedFields) {
      fields += ", and " + std::to_string(f.differences.size() - kListedFields) + " more";
    }
    if (fields.empty()) fields = "ids differ, fields not told apart";
    out += (out.empty() ? "" : "; ") + f.kind + ": " + fields;
  }
  return out;
}

}  // namespace

void CompareOriginRuns(RunSource& source, const store::RunRecord* a, const store::RunRecord* b,
                       bool generate, BisectOrigin& origin) {
  if (a == nullptr || b == nullptr) {
    origin.compared.note = std::string(a == nullptr ? "A" : "B") +
                           "'s job has no finished run in the store to compare";
    return;
  }
  CompareRuns(source, *a, *b, generate, origin.compared);
  origin.fingerprints = CompareFingerprints(source, *a, *b);
}

std::vector<std::string> BisectOriginLines(const BisectOrigin& origin,
                                           std::optional<double> total_kld) {
  std::vector<std::string> out{EndLine("from", "A", origin.a), EndLine("to", "B", origin.b),
                               Divergence(origin.compared)};
  const HostRun& c = origin.compared;
  const bool differ = c.note.empty() && !c.same_stream;
  const std::string diff = Differences(origin.fingerprints);
  const std::string differ_in = diff.empty() ? "" : "; they differ in " + diff;
  if (origin.same_host()) {
    out.push_back("hosts: A and B ran on the same host" +
                  (origin.a.run.host.empty() ? std::string(" (neither recorded one)")
                                             : " (" + origin.a.run.host + ")") +
                  differ_in);
  } else {
    out.push_back("hosts: A ran on " + (origin.a.run.host.empty() ? "-" : origin.a.run.host) +
                  ", B on " + (origin.b.run.host.empty() ? "-" : origin.b.run.host) + differ_in);
  }
  if (origin.same_coordinate) {
    out.push_back(
        !differ ? "the rest: host/hardware: A and B ran the same coordinate, workload and model; "
                  "nothing to bisect"
                : "the rest: host/hardware: A and B ran the same coordinate, workload and model, "
                  "so no axis can explain their divergence: it is what their hosts (or engine "
                  "builds) add");
    return out;
  }
  if (total_kld && differ && !origin.same_host() && c.kld_n > 0 && c.kld_mean > 0) {
    out.push_back("the rest: host/hardware: on this machine the axes give KLD(to, from) " +
                  FormatKld(*total_kld) + ", where A and B ran " + FormatKld(c.kld_mean) + " (" +
                  FormatPercent(*total_kld / c.kld_mean) +
                  " of it); what the hosts add is not an axis, and a bisection on one machine "
                  "does not measure it");
  }
  return out;
}

}  // namespace orch::report
