#include "report/csv_more_fields.h"

#include <cmath>
#include <cstdio>

namespace orch::report {
namespace {

std::string MoreNum(double v) {
  if (std::isnan(v)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g", v);
  return buffer;
}

std::string MoreBool(const std::optional<bool>& b) {
  if (!b) return "";
  return *b ? "true" : "false";
}

std::string MoreJoined(const std::vector<std::string>& values, const char* separator) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

// effective_settings .. effective_note.
std::vector<std::string> EffectiveFields(const CellReport& c) {
  std::vector<std::string> settings, differences;
  for (const auto& [axis, value] : c.effective.axes) settings.push_back(axis + "=" + value);
  for (const EffectiveDifference& d : c.effective_differences) {
    differences.push_back(d.axis + ": " + d.requested + " -> " + d.effective +
                          (d.why.empty() ? "" : " (" + d.why + ")"));
  }
  return {MoreJoined(settings, ";"), MoreJoined(differences, "; "),
          c.cell.is_baseline() ? "" : MoreBool(c.same_effective_as_baseline), c.effective_note};
}

// quorum_majority .. quorum_unreadable: every group, largest first, `;` between groups and
// `,` within one.
std::vector<std::string> QuorumGroupFields(const CellReport& c) {
  const Quorum& q = c.quorum;
  if (q.runs == 0 && q.unreadable == 0) return std::vector<std::string>(7, "");
  std::vector<std::string> sizes, runs, hosts, classes, contributors;
  for (const StreamGroup& g : q.groups) {
    sizes.push_back(std::to_string(g.runs.size()));
    runs.push_back(MoreJoined(g.runs, ","));
    hosts.push_back(MoreJoined(g.hosts, ","));
    classes.push_back(MoreJoined(g.classes, ","));
    contributors.push_back(MoreJoined(g.contributors, ","));
  }
  return {MoreBool(q.majority()),      MoreJoined(sizes, ";"),   MoreJoined(runs, ";"),
          MoreJoined(hosts, ";"),      MoreJoined(classes, ";"), MoreJoined(contributors, ";"),
          std::to_string(q.unreadable)};
}

// generation_basis .. generation_other_text.
std::vector<std::string> GenerationFields(const WorkloadReport& w, const CellReport& c) {
  std::vector<std::string> out(14, "");
  if (c.cell.is_baseline()) {
    if (w.workload.kind == WorkloadKind::kGenerate) {
      out[12] = c.generation.reference_text.value_or("");  // the baseline's own text
    }
    return out;
  }
  const GenerationDetail& d = c.generation;
  if (!d.applies) return out;
  out[0] = CommonPrefixText(d);
  out[1] = std::to_string(d.prefix_positions);
  out[10] = std::to_string(d.noise.repeats);
  out[11] = MoreNum(d.noise.band);
  out[12] = d.reference_text.value_or("");
  out[13] = d.other_text.value_or("");
  if (!d.divergence) return out;
  const GenerationDivergence& g = *d.divergence;
  out[2] = std::string(DivergenceKindName(g.kind));
  out[3] = std::to_string(g.position);
  out[4] = std::to_string(g.reference_argmax);
  out[5] = std::to_string(g.other_argmax);
  out[6] = MoreNum(g.reference_margin);
  out[7] = MoreNum(g.other_margin);
  out[8] = MoreBool(g.reference_within_band);
  out[9] = MoreBool(g.other_within_band);
  return out;
}

}  // namespace

std::vector<std::string> MoreCsvColumns() {
  return {"effective_settings",
          "effective_differences",
          "same_effective_as_baseline",
          "effective_note",
          "quorum_majority",
          "quorum_group_sizes",
          "quorum_group_runs",
          "quorum_group_hosts",
          "quorum_group_classes",
          "quorum_group_contributors",
          "quorum_unreadable",
          "generation_basis",
          "generation_positions",
          "generation_divergence_kind",
          "generation_divergence_position",
          "generation_reference_argmax",
          "generation_other_argmax",
          "generation_reference_margin",
          "generation_other_margin",
          "generation_reference_margin_within_band",
          "generation_other_margin_within_band",
          "generation_noise_band_repeats",
          "generation_noise_band",
          "generation_reference_text",
          "generation_other_text"};
}

std::vector<std::string> MoreCsvFields(const WorkloadReport& w, const CellReport& c) {
  std::vector<std::string> out = EffectiveFields(c);
  for (std::string& f : QuorumGroupFields(c)) out.push_back(std::move(f));
  for (std::string& f : GenerationFields(w, c)) out.push_back(std::move(f));
  return out;
}

}  // namespace orch::report
