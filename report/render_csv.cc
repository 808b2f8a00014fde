#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/csv_more_fields.h"
#include "report/render.h"
#include "report/task_render.h"

namespace orch::report {
namespace {

constexpr const char* kColumns[] = {"experiment",
                                    "partial",
                                    "workload",
                                    "kind",
                                    "cell",
                                    "axis",
                                    "value",
                                    "status",
                                    "reason",
                                    "reference_run",
                                    "run",
                                    "runs_planned",
                                    "runs_available",
                                    "unique_streams",
                                    "repeats_bit_identical",
                                    "repeats_first_difference",
                                    "repeat_noise",
                                    "bit_identical",
                                    "compared",
                                    "common_prefix",
                                    "first_divergence",
                                    "first_flip_position",
                                    "first_flip_reference_token",
                                    "first_flip_other_token",
                                    "top1_agreement",
                                    "kld_mean",
                                    "kld_median",
                                    "kld_p99",
                                    "kld_max",
                                    "rms_delta_p",
                                    "ppl_reference",
                                    "ppl_other",
                                    "ppl_ratio",
                                    "flips",
                                    "near_tie_flips",
                                    "clusters",
                                    "noise_band",
                                    "generated_common_prefix",
                                    "generated_reference_tokens",
                                    "generated_first_difference",
                                    "generated_reference_token",
                                    "generated_other_token",
                                    "first_flip_reference_text",
                                    "first_flip_other_text",
                                    "generated_reference_text",
                                    "generated_other_text",
                                    "requested",
                                    "run_positions",
                                    "generated_tokens",
                                    "stop",
                                    "kld_method",
                                    "kld_exact_count",
                                    "kld_exact_mean",
                                    "kld_exact_median",
                                    "kld_exact_p99",
                                    "kld_exact_max",
                                    "kld_bound_count",
                                    "kld_bound_mean",
                                    "kld_bound_median",
                                    "kld_bound_p99",
                                    "kld_bound_max",
                                    "warnings",
                                    "quorum_runs",
                                    "quorum_streams",
                                    "quorum_agreeing_runs",
                                    "quorum_hosts",
                                    "quorum_classes",
                                    "quorum_contributors",
                                    "rests_on_one_contributor",
                                    "conflicts",
                                    "kld_exact_ci95_lo",
                                    "kld_exact_ci95_hi",
                                    "kld_bound_ci95_lo",
                                    "kld_bound_ci95_hi",
                                    "kld_returned_top_k_count",
                                    "kld_returned_top_k_mean",
                                    "kld_returned_top_k_ci95_lo",
                                    "kld_returned_top_k_ci95_hi",
                                    "top1_agreement_n",
                                    "top1_agreement_ci95_lo",
                                    "top1_agreement_ci95_hi",
                                    "flip_rate",
                                    "flip_rate_ci95_lo",
                                    "flip_rate_ci95_hi",
                                    "ppl_ratio_n",
                                    "ppl_ratio_ci95_lo",
                                    "ppl_ratio_ci95_hi"};

std::string Quote(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string CsvNum(double v) {
  if (std::isnan(v)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g", v);
  return buffer;
}

template <typename T>
std::string CsvOpt(const std::optional<T>& v) {
  return v ? std::to_string(*v) : "";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

// A token's text as the decoder gave it; empty when unknown.
std::string Text(const std::optional<Token>& token) {
  return token && token->text ? *token->text : std::string();
}

std::vector<std::string> Row(const Report& r, const WorkloadReport& w, const CellReport& c) {
  const bool compared = c.status == CellStatus::kCompared && !c.cell.is_baseline();
  const PairResult& p = c.result;
  const digest::StreamSummary& s = p.summary;
  auto when = [compared](std::string v) { return compared ? v : std::string(); };
  std::optional<std::uint64_t> flip_position;
  if (compared && !p.flips.empty()) flip_position = p.flips[0].position;
  const auto& d = p.first_token_difference;
  const bool generate = w.workload.kind == WorkloadKind::kGenerate;
  return {r.experiment,
          Bool(r.partial),
          w.workload.name,
          generate ? "generate" : "teacher_forced",
          c.cell.label,
          c.cell.axis,
          c.cell.value,
          std::string(CellStatusName(c.status)),
          c.reason,
          c.reference_run,
          c.other_run,
          std::to_string(c.repeats.planned),
          std::to_string(c.repeats.available),
          c.repeats.available > 0 ? std::to_string(c.repeats.unique_streams) : "",
          c.repeats.available > 0 ? Bool(c.repeats.bit_identical()) : "",
          CsvOpt(c.repeats.first_difference),
          CsvNum(c.repeats.noise),
          when(Bool(p.bit_identical())),
          when(std::to_string(s.compared)),
          when(std::to_string(s.common_prefix)),
          when(CsvOpt(s.first_divergence)),
          CsvOpt(flip_position),
          flip_position ? std::to_string(p.flips[0].reference_token) : "",
          flip_position ? std::to_string(p.flips[0].other_token) : "",
          when(CsvNum(s.top1_agreement)),
          when(CsvNum(s.kld.mean)),
          when(CsvNum(s.kld.median)),
          when(CsvNum(s.kld.p99)),
          when(CsvNum(s.kld.max)),
          when(CsvNum(s.rms_delta_p)),
          when(CsvNum(s.ppl_reference)),
          when(CsvNum(s.ppl_other)),
          when(CsvNum(s.ppl_ratio)),
          when(std::to_string(p.flip_count)),
          when(std::to_string(c.near_tie_flips)),
          when(std::to_string(p.cluster_count)),
          when(CsvNum(c.noise_band)),
          compared && generate ? std::to_string(p.generated_common_prefix) : "",
          compared && generate ? std::to_string(p.reference_generated) : "",
          compared && d ? std::to_string(d->index) : "",
          compared && d ? std::to_string(d->reference_token) : "",
          compared && d ? std::to_string(d->other_token) : "",
          flip_position ? Text(c.first_flip_reference) : "",
          flip_position ? Text(c.first_flip_other) : "",
          compared && d ? Text(c.generated_reference) : "",
          compared && d ? Text(c.generated_other) : ""};
}

// requested .. warnings: the extent of the cell's run, the KLD method split, the warnings.
std::vector<std::string> HonestyFields(const WorkloadReport& w, const CellReport& c) {
  const bool has_run = c.status == CellStatus::kCompared;
  const bool compared = has_run && !c.cell.is_baseline();
  const bool generate = w.workload.kind == WorkloadKind::kGenerate;
  auto when = [compared](std::string v) { return compared ? v : std::string(); };
  std::vector<std::string> out{
      CsvOpt(c.requested), has_run ? std::to_string(c.extent.positions) : "",
      has_run && generate ? std::to_string(c.extent.generated_tokens()) : "",
      c.extent.stop.reason.value_or(""), when(std::string(KldMethodName(c.result.summary.kld)))};
  for (const KldSummary* k : {&c.result.kld_exact, &c.result.kld_bound}) {
    out.insert(out.end(), {when(std::to_string(k->count)), when(CsvNum(k->mean)),
                           when(CsvNum(k->median)), when(CsvNum(k->p99)), when(CsvNum(k->max))});
  }
  std::string warnings;
  for (const Warning& warning : c.warnings) {
    warnings += (warnings.empty() ? "" : "; ") + warning.kind + ": " + warning.message;
  }
  out.push_back(warnings);
  return out;
}

// quorum_runs .. conflicts: every usable run of the cell (report/quorum.h).
std::vector<std::string> QuorumFields(const CellReport& c) {
  const Quorum& q = c.quorum;
  std::string contributors;
  for (const std::string& name : q.contributors) {
    contributors += (contributors.empty() ? "" : ";") + name;
  }
  const bool any = q.runs > 0;
  auto when = [any](std::string v) { return any ? v : std::string(); };
  return {std::to_string(q.runs),
          when(std::to_string(q.streams)),
          when(std::to_string(q.agreeing_runs.size())),
          when(std::to_string(q.hosts)),
          when(std::to_string(q.classes)),
          contributors,
          when(Bool(q.rests_on_one_contributor())),
          std::to_string(c.conflicts.size())};
}

// kld_exact_ci95_lo .. ppl_ratio_ci95_hi: n and 95% intervals (report/intervals.h); the
// bounds are empty where there is no interval (n below 2).
std::vector<std::string> IntervalFields(const CellReport& c) {
  const bool compared = c.status == CellStatus::kCompared && !c.cell.is_baseline();
  if (!compared) return std::vector<std::string>(17, "");
  const PairResult& p = c.result;
  const PairEstimates& e = p.estimates;
  std::vector<std::string> out;
  auto bounds = [&out](const Interval& ci) {
    out.push_back(CsvNum(ci.lo));
    out.push_back(CsvNum(ci.hi));
  };
  bounds(p.kld_exact.ci95);
  bounds(p.kld_bound.ci95);
  out.push_back(std::to_string(p.kld_returned_top_k.count));
  out.push_back(CsvNum(p.kld_returned_top_k.mean));
  bounds(p.kld_returned_top_k.ci95);
  out.push_back(std::to_string(e.top1_agreement.n));
  bounds(e.top1_agreement.ci95);
  out.push_back(CsvNum(e.flip_rate.mean));
  bounds(e.flip_rate.ci95);
  out.push_back(std::to_string(e.ppl_ratio.n));
  bounds(e.ppl_ratio.ci95);
  return out;
}

void Write(const std::vector<std::string>& row, std::ostringstream& out) {
  for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << Quote(row[i]);
  out << "\n";
}

std::vector<std::string> FullRow(const Report& r, const WorkloadReport& w, const CellReport& c) {
  std::vector<std::string> row = Row(r, w, c);
  for (std::string& field : HonestyFields(w, c)) row.push_back(std::move(field));
  for (std::string& field : QuorumFields(c)) row.push_back(std::move(field));
  for (std::string& field : IntervalFields(c)) row.push_back(std::move(field));
  for (std::string& field : MoreCsvFields(w, c)) row.push_back(std::move(field));
  return row;
}

}  // namespace

std::string RenderCsv(const Report& report) {
  std::ostringstream out;
  // Task workloads add their columns, empty on the other rows (docs/report.md).
  std::vector<std::string> header(std::begin(kColumns), std::end(kColumns));
  for (std::string& column : MoreCsvColumns()) header.push_back(std::move(column));
  const std::size_t columns = header.size();
  const std::size_t task_columns = report.tasks.empty() ? 0 : TaskCsvColumns().size();
  if (task_columns > 0) {
    for (std::string& name : TaskCsvColumns()) header.push_back(std::move(name));
  }
  Write(header, out);
  auto write = [&](std::vector<std::string> row) {
    row.resize(columns + task_columns);
    Write(row, out);
  };
  for (const WorkloadReport& w : report.workloads) {
    write(FullRow(report, w, w.baseline));
    for (const CellReport& c : w.cells) write(FullRow(report, w, c));
  }
  for (std::vector<std::string>& row : TaskCsvRows(report, columns)) write(std::move(row));
  return out.str();
}

}  // namespace orch::report
