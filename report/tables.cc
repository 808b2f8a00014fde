#include "report/tables.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "fingerprint/flatten.h"

namespace orch::report {
namespace {

std::string Count(std::uint64_t n) { return std::to_string(n); }

// Whether text[i..] is an escape the driver already wrote for a byte that is not UTF-8:
// the four characters \xNN (docs/report.md, "Token text").
bool DriverEscape(const std::string& text, std::size_t i) {
  return i + 3 < text.size() && text[i] == '\\' && text[i + 1] == 'x' &&
         std::isxdigit(static_cast<unsigned char>(text[i + 2])) &&
         std::isxdigit(static_cast<unsigned char>(text[i + 3]));
}

// C-style escapes for quotes, backslashes and control characters; other bytes as they are.
// A driver's \xNN stays as it is: the text is escaped once.
std::string Escaped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    unsigned char u = static_cast<unsigned char>(c);
    if (DriverEscape(text, i)) {
      out += text.substr(i, 4);
      i += 3;
    } else if (c == '"' || c == '\\') {
      out += {'\\', c};
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string StatusText(const CellReport& cell) {
  if (cell.status == CellStatus::kCompared) {
    return cell.same_effective_as_baseline ? "same effective configuration as baseline" : "ok";
  }
  return std::string(CellStatusName(cell.status)) + ": " + cell.reason;
}

// The PPL of the baseline as every compared cell of the workload saw it.
double BaselinePpl(const WorkloadReport& w) {
  for (const CellReport& c : w.cells) {
    if (c.status == CellStatus::kCompared) return c.result.summary.ppl_reference;
  }
  return std::nan("");
}

std::string FirstFlip(const CellReport& c) {
  if (!c.first_flip_reference) return "none";
  return "position " + Count(c.result.flips[0].position) + ": " +
         FormatToken(*c.first_flip_reference) + " / " + FormatToken(*c.first_flip_other);
}

std::string RepeatResult(const WorkloadReport& w, const CellReport& c) {
  if (c.status != CellStatus::kCompared) return StatusText(c);
  const Repeatability& r = c.repeats;
  if (r.available == 1) return "single run";
  const std::string same = r.returned_top_k ? "identical returned top-k" : "bit-identical";
  std::string text =
      r.bit_identical() ? same : "differs from position " + Count(*r.first_difference);
  if (w.workload.kind == WorkloadKind::kGenerate && r.generated_common_prefix) {
    text += "; generated tokens " + Count(*r.generated_common_prefix) + " / " +
            Count(r.generated_length.value_or(0)) + " identical";
  }
  return text;
}

void AddRepeatRow(const WorkloadReport& w, const CellReport& c, Table& t) {
  t.rows.push_back({c.cell.label,
                    std::to_string(c.repeats.available) + " / " + std::to_string(c.repeats.planned),
                    c.repeats.available > 0 ? std::to_string(c.repeats.unique_streams) + " / " +
                                                  std::to_string(c.repeats.available)
                                            : "-",
                    RepeatResult(w, c), FormatNumber(c.repeats.noise, 4)});
}

std::vector<const CellReport*> WithBaseline(const WorkloadReport& w) {
  std::vector<const CellReport*> out{&w.baseline};
  for (const CellReport& c : w.cells) out.push_back(&c);
  return out;
}

std::string Context(const FlipTokens& k) {
  std::string out = "\"";
  for (const Token& token : k.context) out += TokenText(token);
  return out + "\"";
}

std::string Joined(const std::vector<SeenValue>& values, bool with_cells) {
  std::string out;
  for (const SeenValue& v : values) {
    out += (out.empty() ? "" : "; ") + v.value;
    if (!with_cells) continue;
    std::string cells;
    for (const std::string& c : v.cells) cells += (cells.empty() ? "" : ", ") + c;
    out += " [" + cells + "]";
  }
  return out;
}

}  // namespace

std::string TokenText(const Token& token) {
  return token.text ? Escaped(*token.text) : "<" + std::to_string(token.id) + ">";
}

std::vector<std::string> ProvenanceLines(const Report& r) {
  const Provenance& p = r.provenance;
  std::vector<std::string> lines;
  auto line = [&lines](const std::string& name, const std::string& value) {
    if (!value.empty()) lines.push_back(name + ": " + value);
  };
  line("model", p.model_name + (p.model_id.empty() ? "" : " (" + p.model_id + ")"));
  line("model files", Joined(p.model_files, true));
  std::string baseline;
  for (const auto& [axis, value] : p.baseline) {
    baseline += (baseline.empty() ? "" : ", ") + axis + "=" + value;
  }
  line("baseline", baseline);
  line("hosts", Joined(p.hosts, true));
  line("engine builds", Joined(p.engines, true));
  return lines;
}

std::string FormatNumber(double value, int digits) {
  if (std::isnan(value)) return "-";
  if (value == 0.0) return "0";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  const int sig = std::max(1, digits);
  const double magnitude = std::fabs(value);
  char buffer[64];
  if (magnitude >= 1e-3 && magnitude < 1e6) {
    const int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    std::snprintf(buffer, sizeof buffer, "%.*f", std::max(0, sig - 1 - exponent), value);
    return buffer;
  }
  // Exponent form without trailing zeros in the mantissa: 4.1e-14, 2.29e-06.
  std::snprintf(buffer, sizeof buffer, "%.*e", sig - 1, value);
  std::string text = buffer;
  const auto e = text.find('e');
  std::string mantissa = text.substr(0, e);
  if (mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  return mantissa + text.substr(e);
}

std::string FormatKld(double value) { return FormatNumber(value, 4); }

std::string FormatPercent(double fraction) {
  if (std::isnan(fraction)) return "-";
  // Enough digits that a fraction below one never reads as 100%.
  for (int sig = 4; sig < 12; ++sig) {
    const std::string text = FormatNumber(100.0 * fraction, sig);
    if (fraction >= 1.0 || std::strtod(text.c_str(), nullptr) < 100.0) return text + "%";
  }
  return FormatNumber(100.0 * fraction, 12) + "%";
}

std::string FormatInterval(const Interval& ci, const std::function<std::string(double)>& format) {
  if (!ci.available()) return "";
  return "[" + format(ci.lo) + ", " + format(ci.hi) + "]";
}

std::string FormatEstimate(double mean, std::uint64_t n, const Interval& ci,
                           const std::function<std::string(double)>& format) {
  if (n == 0 || std::isnan(mean)) return "-";
  const std::string interval = FormatInterval(ci, format);
  return format(mean) + " " + (interval.empty() ? "(no interval)" : interval) + " n=" + Count(n);
}

std::string FormatToken(const Token& token) {
  std::string out = std::to_string(token.id);
  if (token.text) out += " \"" + Escaped(*token.text) + "\"";
  return out;
}

std::string StatusLine(const Report& r) {
  std::string line = "experiment " + r.experiment + ": " + std::to_string(r.jobs_total) +
                     " jobs, " + std::to_string(r.jobs_succeeded) + " succeeded, " +
                     std::to_string(r.jobs_failed) + " failed, " +
                     std::to_string(r.jobs_in_progress) + " not finished";
  if (r.partial) line += " -- PARTIAL REPORT: the experiment is still running";
  return line;
}

std::string ReferenceLine(const WorkloadReport& w) {
  if (w.baseline.status != CellStatus::kCompared) {
    return "reference: none (baseline " + StatusText(w.baseline) + ")";
  }
  return "reference: baseline repeat 0 (run " + w.baseline.reference_run + ")";
}

// Drops column `index` of every row and the header.
void DropColumn(Table& t, std::size_t index) {
  t.header.erase(t.header.begin() + static_cast<std::ptrdiff_t>(index));
  for (auto& row : t.rows) row.erase(row.begin() + static_cast<std::ptrdiff_t>(index));
}

// Drops column `index` when no row has a value there.
void DropIfEmpty(Table& t, std::size_t index) {
  if (std::all_of(t.rows.begin(), t.rows.end(),
                  [index](const auto& row) { return row[index].empty(); })) {
    DropColumn(t, index);
  }
}

Table RepeatabilityTable(const WorkloadReport& w) {
  Table t{"Repeatability (same coordinate rerun)",
          {"cell", "runs", "unique streams", "result", "noise |dlogit|"},
          {}};
  AddRepeatRow(w, w.baseline, t);
  for (const CellReport& c : w.cells) {
    if (c.repeats.planned > 1) AddRepeatRow(w, c, t);
  }
  return t;
}

std::string RunOrigin(const RunIdentity& run) {
  return run.contributor + " on " + (run.host.empty() ? "an unrecorded host" : run.host) +
         " (agent " + run.agent_id + ")";
}

// The one contributor every row of `rows` rests on; empty when there are several.
std::string SoleContributor(const std::vector<const CellReport*>& rows) {
  std::string sole;
  for (const CellReport* c : rows) {
    const Quorum& q = c->quorum;
    if (q.runs == 0 && q.unreadable == 0) continue;
    if (!q.rests_on_one_contributor()) return "";
    if (!sole.empty() && sole != q.all_contributors[0]) return "";
    sole = q.all_contributors[0];
  }
  return sole;
}

Table QuorumTable(const WorkloadReport& w) {
  const std::vector<const CellReport*> rows = WithBaseline(w);
  // A solo user's runs: said once in the title, not on every row.
  const std::string sole = SoleContributor(rows);
  Table t{sole.empty() ? "Quorum (every usable run of the cell's jobs, grouped by bit-identical "
                         "streams)"
                       : "Quorum: every run rests on one contributor (" + sole +
                             "); runs grouped by bit-identical streams",
          {"cell", "runs", "streams", "largest agreeing group", "hosts", "classes", "contributors",
           "note"},
          {}};
  for (const CellReport* c : rows) {
    const Quorum& q = c->quorum;
    if (q.runs == 0 && q.unreadable == 0) continue;
    std::string contributors;
    for (const std::string& name : q.contributors) {
      contributors += (contributors.empty() ? "" : ", ") + name;
    }
    std::string note;
    auto add = [&note](const std::string& text) { note += (note.empty() ? "" : "; ") + text; };
    if (!q.majority()) {
      std::size_t tied = 0;
      for (const StreamGroup& g : q.groups) tied += g.runs.size() == q.groups[0].runs.size();
      const std::size_t size = q.groups[0].runs.size();
      add("no majority: " + Count(tied) + " groups of " + Count(size) +
          (size == 1 ? " run" : " runs"));
    }
    if (sole.empty() && q.rests_on_one_contributor()) {
      add("rests on one contributor (" + q.all_contributors[0] + ")");
    }
    if (!c->conflicts.empty()) add(Count(c->conflicts.size()) + " conflicts");
    if (q.unreadable > 0) add(Count(static_cast<std::uint64_t>(q.unreadable)) + " unreadable");
    t.rows.push_back({c->cell.label, std::to_string(q.runs), std::to_string(q.streams),
                      Count(q.agreeing_runs.size()) + " / " + std::to_string(q.runs),
                      std::to_string(q.hosts), std::to_string(q.classes), contributors, note});
  }
  // The note column only when a row has a note; contributors only when they vary.
  DropIfEmpty(t, 7);
  if (!sole.empty()) DropColumn(t, 6);
  return t;
}

Table StreamGroupTable(const WorkloadReport& w) {
  Table t{"Stream groups (every group of bit-identical streams of a cell whose runs disagree)",
          {"cell", "group", "runs", "hosts", "classes", "contributors"},
          {}};
  auto joined = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("-") : out;
  };
  for (const CellReport* c : WithBaseline(w)) {
    const Quorum& q = c->quorum;
    if (q.groups.size() < 2) continue;
    for (std::size_t i = 0; i < q.groups.size(); ++i) {
      const StreamGroup& g = q.groups[i];
      t.rows.push_back({c->cell.label, Count(i + 1) + " of " + Count(q.groups.size()),
                        Count(g.runs.size()) + " / " + std::to_string(q.runs), joined(g.hosts),
                        joined(g.classes), joined(g.contributors)});
    }
  }
  return t;
}

Table ConflictTable(const WorkloadReport& w) {
  Table t{
      "Conflicts (one job, one fingerprint class, different streams: nondeterminism "
      "evidence; both runs are kept)",
      {"cell", "repeat", "run A", "run B", "A ran as", "B ran as", "first difference"},
      {}};
  for (const CellReport* c : WithBaseline(w)) {
    for (const Conflict& k : c->conflicts) {
      t.rows.push_back({c->cell.label, std::to_string(k.repeat), k.a.run_id, k.b.run_id,
                        RunOrigin(k.a), RunOrigin(k.b),
                        k.first_difference ? "position " + Count(*k.first_difference) : "-"});
    }
  }
  return t;
}

// Identity on the basis the rows allow: bit-identical full rows, identical returned
// top-k values, or not comparable (a full row against a returned top-k).
std::string Identity(const CellReport& c) {
  const digest::StreamSummary& s = c.result.summary;
  const ReturnedTopK& top_k = c.result.returned_top_k;
  if (s.compared > 0 && s.not_comparable_rows == s.compared) {
    return "not comparable (full rows vs " + ReturnedTopKName(top_k) + ")";
  }
  std::string text;
  if (c.result.bit_identical()) {
    text = top_k.any() ? "identical " + ReturnedTopKName(top_k) : "bit-identical";
  } else {
    text = Count(s.common_prefix) + " / " + Count(s.compared);
    if (top_k.both_sides(s.compared)) text += " (" + ReturnedTopKName(top_k) + ")";
  }
  if (s.not_comparable_rows > 0) text += "; " + Count(s.not_comparable_rows) + " not comparable";
  return text;
}

std::string KldEstimate(const KldSummary& k) {
  return FormatEstimate(k.mean, k.count, k.ci95, FormatKld);
}

std::string ReturnedKld(const PairResult& r) {
  if (r.kld_returned_top_k.count == 0) return "-";
  return KldEstimate(r.kld_returned_top_k) + " (" + ReturnedTopKName(r.returned_top_k) + ")";
}

std::string Ratio(double v) { return FormatNumber(v, 4); }

// Whether a compared cell of the workload has top-k-only rows: the tables then show the
// returned top-k basis in columns of its own.
bool AnyReturnedTopK(const WorkloadReport& w) {
  return std::any_of(w.cells.begin(), w.cells.end(), [](const CellReport& c) {
    return c.status == CellStatus::kCompared && c.result.returned_top_k.any();
  });
}

Table CellTable(const WorkloadReport& w) {
  Table t{"Cells against the baseline (teacher-forced)",
          {"changed", "PPL, baseline " + FormatNumber(BaselinePpl(w), 4), "PPL ratio [95% CI] n",
           "KLD exact mean [95% CI] n", "KLD bound mean [95% CI] n",
           "KLD returned top-k mean [95% CI] n", "RMS dp", "top-1 agreement [95% CI] n",
           "identical positions", "first flip", "flips (near-tie)", "clusters", "status"},
          {}};
  constexpr std::size_t kReturnedColumn = 5;
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) {
      std::vector<std::string> row(t.header.size(), "-");
      row.front() = c.cell.label;
      row.back() = StatusText(c);
      t.rows.push_back(std::move(row));
      continue;
    }
    const digest::StreamSummary& s = c.result.summary;
    const PairEstimates& e = c.result.estimates;
    // Said only when some compared positions are not exact (n says the rest).
    const bool partial =
        c.result.kld_exact.count > 0 && c.result.kld_exact.count < c.result.summary.compared;
    const std::string coverage = partial ? " (" + ExactCoverage(c.result) + ")" : "";
    t.rows.push_back({c.cell.label, FormatNumber(s.ppl_other, 4),
                      FormatEstimate(s.ppl_ratio, e.ppl_ratio.n, e.ppl_ratio.ci95, Ratio),
                      KldEstimate(c.result.kld_exact) + coverage, KldEstimate(c.result.kld_bound),
                      ReturnedKld(c.result), FormatPercent(s.rms_delta_p),
                      FormatEstimate(e.top1_agreement.mean, e.top1_agreement.n,
                                     e.top1_agreement.ci95, FormatPercent),
                      Identity(c), FirstFlip(c),
                      Count(c.result.flip_count) + " (" + Count(c.near_tie_flips) + ")",
                      Count(c.result.cluster_count), StatusText(c)});
  }
  if (!AnyReturnedTopK(w)) DropColumn(t, kReturnedColumn);
  return t;
}

Table GenerateTable(const WorkloadReport& w) {
  Table t{"Generated tokens against the baseline",
          {"changed", "same-coordinate repeats", "generated-token prefix", "first divergence",
           "status"},
          {}};
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) {
      t.rows.push_back({c.cell.label, "-", "-", "-", StatusText(c)});
      continue;
    }
    const PairResult& r = c.result;
    std::string repeats = c.repeats.available <= 1 ? "single run" : RepeatResult(w, c);
    std::string divergence = "none";
    if (r.first_token_difference) {
      divergence = "token " + Count(r.first_token_difference->index + 1) + ": " +
                   FormatToken(*c.generated_reference) + " / " + FormatToken(*c.generated_other);
    }
    t.rows.push_back(
        {c.cell.label, repeats,
         Count(r.generated_common_prefix) + " / " + Count(r.reference_generated) + " tokens",
         divergence, StatusText(c)});
  }
  return t;
}

Table FlipTable(const WorkloadReport& w, std::size_t per_cell) {
  Table t{
      "Top-1 flips (context: the input text up to the flipped prediction; margin: "
      "baseline top-1 minus top-2 logit)",
      {"cell", "position", "context", "baseline token", "cell token", "margin", "noise band",
       "near-tie"},
      {}};
  for (const CellReport& c : w.cells) {
    for (std::size_t i = 0; i < c.result.flips.size() && i < per_cell; ++i) {
      const Flip& f = c.result.flips[i];
      const FlipTokens& k = c.flip_tokens[i];
      t.rows.push_back({c.cell.label, Count(f.position), Context(k), FormatToken(k.reference),
                        FormatToken(k.other), FormatNumber(f.margin, 4),
                        FormatNumber(c.noise_band, 4), f.near_tie ? "yes" : "no"});
    }
  }
  return t;
}

Table KldTable(const WorkloadReport& w) {
  const bool returned = AnyReturnedTopK(w);
  Table t{
      std::string("KL divergence by method (exact: both full rows kept; bound: top-k lower "
                  "bound of the exact value") +
          (returned ? "; returned top-k: over a server's returned tokens and one tail bucket, a "
                      "different measurement, never averaged with the others)"
                    : ")"),
      {"changed", "exact positions", "exact mean [95% CI]", "exact median", "exact p99",
       "exact max", "bound positions", "bound mean [95% CI]", "bound median", "bound p99",
       "bound max", "returned top-k positions", "returned top-k mean [95% CI]",
       "returned top-k median", "returned top-k p99", "returned top-k max", "returned top-k basis"},
      {}};
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared) continue;
    std::vector<std::string> row{c.cell.label};
    const PairResult& r = c.result;
    for (const KldSummary* k : {&r.kld_exact, &r.kld_bound, &r.kld_returned_top_k}) {
      const std::string interval = FormatInterval(k->ci95, FormatKld);
      row.insert(row.end(),
                 {Count(k->count), FormatKld(k->mean) + (interval.empty() ? "" : " " + interval),
                  FormatKld(k->median), FormatKld(k->p99), FormatKld(k->max)});
    }
    row[1] += " of " + Count(r.summary.compared);  // exact positions of all compared
    const std::string basis = ReturnedTopKName(r.returned_top_k);
    row.push_back(basis.empty() ? "-" : basis);
    t.rows.push_back(std::move(row));
  }
  while (!returned && t.header.size() > 11) DropColumn(t, 11);
  return t;
}

Table WarningTable(const WorkloadReport& w) {
  Table t{"Warnings (what was compared is less than what the plan requested)",
          {"cell", "kind", "warning"},
          {}};
  for (const CellReport* c : WithBaseline(w)) {
    for (const Warning& warning : c->warnings) {
      t.rows.push_back({c->cell.label, warning.kind, warning.message});
    }
  }
  return t;
}

Table EffectiveTable(const WorkloadReport& w) {
  Table t{"Effective settings (what the engine ran, where it is not what the coordinate says)",
          {"cell", "axis", "requested", "ran as", "why"},
          {}};
  for (const CellReport* c : WithBaseline(w)) {
    for (const EffectiveDifference& d : c->effective_differences) {
      t.rows.push_back(
          {c->cell.label, d.axis, d.requested, d.effective, d.why.empty() ? "-" : d.why});
    }
  }
  for (const CellReport& c : w.cells) {
    if (c.same_effective_as_baseline) {
      t.rows.push_back({c.cell.label, "-", "-", "-", c.effective_note});
    }
  }
  return t;
}

Table ClusterTable(const WorkloadReport& w, std::size_t per_cell) {
  Table t{"Flip clusters (flips at most " + Count(kClusterGap) + " positions apart)",
          {"cell", "positions", "flips"},
          {}};
  for (const CellReport& c : w.cells) {
    for (std::size_t i = 0; i < c.result.clusters.size() && i < per_cell; ++i) {
      const FlipCluster& k = c.result.clusters[i];
      t.rows.push_back({c.cell.label, Count(k.first) + "-" + Count(k.last), Count(k.flips)});
    }
  }
  return t;
}

Table FingerprintTable(const WorkloadReport& w) {
  Table t{"Fingerprint differences (baseline run vs cell run)",
          {"cell", "fingerprint", "field", "baseline", "cell"},
          {}};
  for (const CellReport& c : w.cells) {
    for (const FingerprintComparison& f : c.fingerprints) {
      if (f.same || (f.reference_id.empty() && f.other_id.empty())) continue;
      if (!f.note.empty()) {
        t.rows.push_back({c.cell.label, f.kind, "-", f.note, ""});
        continue;
      }
      for (const fingerprint::FieldDifference& d : f.differences) {
        t.rows.push_back({c.cell.label, f.kind, d.field, fingerprint::DisplayValue(d.a),
                          fingerprint::DisplayValue(d.b)});
      }
    }
  }
  return t;
}

std::string RankedKld(const AxisRank& k) {
  // The method; with how many positions are exact when not all of them are.
  const std::string coverage =
      "exact on " + Count(k.exact_positions) + " of " + Count(k.compared_positions) + " positions";
  std::string method = k.kld_method == "exact" ? coverage : k.kld_method + ", " + coverage;
  if (k.exact_positions == k.compared_positions) method = k.kld_method;
  return FormatEstimate(k.kld_mean, k.kld_n, k.kld_ci95, FormatKld) + " (" + method + ")";
}

Table AttributionTable(const Report& r) {
  Table t{
      "Attribution by KLD mean, with 95% intervals (teacher-forced workloads, strongest "
      "cell per axis; not separable: its interval overlaps the one ranked above)",
      {"rank", "by KLD mean", "KLD mean [95% CI] n (method)", "separable"},
      {}};
  // An axis whose cells have returned top-k KLDs only is ranked by top-1 but not here.
  for (std::size_t i = 0; i < r.by_kld.size(); ++i) {
    const AxisRank& k = r.by_kld[i];
    t.rows.push_back({std::to_string(i + 1), k.cell + " (" + k.workload + ")", RankedKld(k),
                      k.kld_separability});
  }
  DropIfEmpty(t, 3);
  return t;
}

Table Top1AttributionTable(const Report& r) {
  Table t{"Attribution by top-1 disagreement (the flip rate), with 95% Wilson intervals",
          {"rank", "by top-1 disagreement", "disagreement [95% CI] n", "separable"},
          {}};
  for (std::size_t i = 0; i < r.by_top1.size(); ++i) {
    const AxisRank& d = r.by_top1[i];
    t.rows.push_back({std::to_string(i + 1), d.cell + " (" + d.workload + ")",
                      FormatEstimate(d.top1_disagreement, d.top1_n, d.top1_ci95, FormatPercent),
                      d.top1_separability});
  }
  DropIfEmpty(t, 3);
  return t;
}

Table ReturnedTopKAttributionTable(const Report& r) {
  Table t{
      "Attribution on the returned top-k basis (ranked apart: KLD over a server's "
      "returned tokens is a different measurement from the exact and bound KLDs above)",
      {"rank", "by returned top-k KLD mean", "KLD mean [95% CI] n (basis)", "separable"},
      {}};
  for (std::size_t i = 0; i < r.by_kld_returned_top_k.size(); ++i) {
    const AxisRank& k = r.by_kld_returned_top_k[i];
    t.rows.push_back({std::to_string(i + 1), k.cell + " (" + k.workload + ")", RankedKld(k),
                      k.kld_separability});
  }
  DropIfEmpty(t, 3);
  return t;
}

}  // namespace orch::report
