#include "report/position_export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "digest/position_compare.h"
#include "report/paired_scan.h"

namespace orch::report {
namespace {

using nlohmann::json;

constexpr double kExportNaN = std::numeric_limits<double>::quiet_NaN();

constexpr const char* kColumns[] = {"workload",
                                    "cell",
                                    "repeat",
                                    "run",
                                    "reference_run",
                                    "position",
                                    "token",
                                    "token_text",
                                    "target",
                                    "target_text",
                                    "target_logprob_reference",
                                    "target_logprob_cell",
                                    "kld",
                                    "kld_kind",
                                    "top1_reference",
                                    "top1_cell",
                                    "margin",
                                    "flip",
                                    "near_tie",
                                    "cluster"};

// One pair of runs to export, and what the report decided for it.
struct PairToExport {
  const WorkloadReport* workload;
  const CellReport* cell;
  int repeat;
  std::string run;
  std::string reference_run;
  double noise_band;
};

// A value of a row: absent (empty CSV field, JSON null), text, integer, number or bool.
struct ExportField {
  enum class Kind { kAbsent, kText, kInt, kNumber, kBool } kind = Kind::kAbsent;
  std::string text;
  std::int64_t integer = 0;
  double number = 0.0;
  bool boolean = false;
};

ExportField Absent() { return {}; }
ExportField TextField(std::string v) { return {ExportField::Kind::kText, std::move(v)}; }
ExportField Int(std::int64_t v) { return {ExportField::Kind::kInt, {}, v}; }
ExportField Number(double v) {
  return std::isnan(v) ? Absent() : ExportField{ExportField::Kind::kNumber, {}, 0, v};
}
ExportField Bool(bool v) { return {ExportField::Kind::kBool, {}, 0, 0.0, v}; }

std::string_view KldKind(digest::KldMethod method) {
  switch (method) {
    case digest::KldMethod::kExact:
      return "exact";
    case digest::KldMethod::kTopK:
      return "bound";
    case digest::KldMethod::kReturnedTopK:
      return "returned_top_k";
    case digest::KldMethod::kNone:
      return "none";
  }
  return "none";
}

double ExportMargin(const digest::RowDigest& d) {
  if (d.top.size() < 2) return kExportNaN;
  return static_cast<double>(d.top[0].logit) - static_cast<double>(d.top[1].logit);
}

// -NLL: the target's log-probability, absent without a target.
double LogProb(double nll) { return std::isnan(nll) ? kExportNaN : -nll; }

// Shortest text that reads back to the same double.
std::string Shortest(double v) {
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v) break;
  }
  return buffer;
}

std::string Quote(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

class RowWriter {
 public:
  RowWriter(PositionFormat format, std::ostream& out) : format_(format), out_(out) {}

  void Begin(const std::string& experiment) {
    if (format_ == PositionFormat::kCsv) {
      std::string header;
      for (const char* column : kColumns)
        header += (header.empty() ? "" : ",") + std::string(column);
      out_ << header << "\n";
      return;
    }
    json columns = json::array();
    for (const char* column : kColumns) columns.push_back(column);
    out_ << "{\"schema\":\"orch.positions/1\",\"experiment\":" << json(experiment).dump()
         << ",\"columns\":" << columns.dump() << ",\"rows\":[";
  }

  void Row(const std::vector<ExportField>& fields) {
    if (format_ == PositionFormat::kCsv) {
      std::string line;
      for (std::size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + Csv(fields[i]);
      out_ << line << "\n";
      return;
    }
    std::string object = "{";
    for (std::size_t i = 0; i < fields.size(); ++i) {
      object += (i ? "," : "") + json(kColumns[i]).dump() + ":" + Json(fields[i]);
    }
    out_ << (rows_++ ? ",\n" : "\n") << object << "}";
  }

  void End() {
    if (format_ == PositionFormat::kJson) out_ << (rows_ ? "\n" : "") << "]}\n";
  }

 private:
  static std::string Csv(const ExportField& f) {
    switch (f.kind) {
      case ExportField::Kind::kAbsent:
        return "";
      case ExportField::Kind::kText:
        return Quote(f.text);
      case ExportField::Kind::kInt:
        return std::to_string(f.integer);
      case ExportField::Kind::kNumber:
        return Shortest(f.number);
      case ExportField::Kind::kBool:
        return f.boolean ? "true" : "false";
    }
    return "";
  }

  static std::string Json(const ExportField& f) {
    switch (f.kind) {
      case ExportField::Kind::kAbsent:
        return "null";
      case ExportField::Kind::kText:
        return json(f.text).dump(-1, ' ', false, json::error_handler_t::replace);
      case ExportField::Kind::kInt:
        return std::to_string(f.integer);
      case ExportField::Kind::kNumber:
        return std::isfinite(f.number) ? Shortest(f.number) : "null";
      case ExportField::Kind::kBool:
        return f.boolean ? "true" : "false";
    }
    return "null";
  }

  PositionFormat format_;
  std::ostream& out_;
  std::size_t rows_ = 0;
};

// The rows of one pair, made as the pair is scanned.
class PairRows {
 public:
  PairRows(const PairToExport& pair, const TokenDecoder* decoder, RowWriter& writer)
      : pair_(pair), decoder_(decoder), writer_(writer) {}

  Status Add(const digest::PositionRecord& p, const digest::PositionRecord& q) {
    std::vector<ExportField> row = Identity(p);
    // Generate workloads: distributions are compared only while the generated tokens
    // agree (the report's rule), the first differing token's position included.
    const bool compared = !diverged_;
    if (p.output_token >= 0 && q.output_token >= 0 && p.output_token != q.output_token) {
      diverged_ = true;
    }
    if (!compared && pair_.workload->workload.kind == WorkloadKind::kGenerate) {
      row.insert(row.end(), {Absent(), Absent(), Absent(), TextField("not_compared"),
                             Int(p.digest.argmax), Int(q.digest.argmax),
                             Number(ExportMargin(p.digest)), Absent(), Absent(), Absent()});
    } else {
      ORCH_RETURN_IF_ERROR(AddMetrics(p, q, row));
    }
    writer_.Row(row);
    return Status();
  }

 private:
  // target_logprob_reference .. cluster, from digest::ComparePosition.
  Status AddMetrics(const digest::PositionRecord& p, const digest::PositionRecord& q,
                    std::vector<ExportField>& row) {
    ORCH_ASSIGN_OR_RETURN(
        digest::PositionComparison c,
        digest::ComparePosition(p.position, p.digest, q.digest, p.full_row, q.full_row));
    const bool flip = !c.same_top1;
    const double margin = ExportMargin(p.digest);
    if (flip) Cluster(p.position);
    const bool scored = c.kld_method != digest::KldMethod::kNone;
    row.insert(row.end(),
               {Number(LogProb(c.nll_reference)), Number(LogProb(c.nll_other)),
                scored ? Number(c.kld) : Absent(), TextField(std::string(KldKind(c.kld_method))),
                Int(p.digest.argmax), Int(q.digest.argmax), Number(margin), Bool(flip),
                flip ? Bool(!std::isnan(margin) && margin <= pair_.noise_band) : Absent(),
                flip ? Int(static_cast<std::int64_t>(clusters_)) : Absent()});
    return Status();
  }

  // workload .. target_text.
  std::vector<ExportField> Identity(const digest::PositionRecord& p) const {
    const std::int32_t target = p.digest.target_id;
    const bool has_target = target != digest::kNoTarget && target >= 0;
    return {TextField(pair_.workload->workload.name),
            TextField(pair_.cell->cell.label),
            Int(pair_.repeat),
            TextField(pair_.run),
            TextField(pair_.reference_run),
            Int(static_cast<std::int64_t>(p.position)),
            Int(p.input_token),
            TokenText(p.input_token),
            has_target ? Int(target) : Absent(),
            has_target ? TokenText(target) : Absent()};
  }

  ExportField TokenText(std::int32_t id) const {
    if (decoder_ == nullptr || id < 0) return Absent();
    std::optional<std::string> text = decoder_->Decode(id);
    return text ? TextField(*text) : Absent();
  }

  // Flips at most kClusterGap apart share a cluster (the report's rule); numbered from 1.
  void Cluster(std::uint64_t position) {
    if (clusters_ == 0 || position - last_flip_ > kClusterGap) ++clusters_;
    last_flip_ = position;
  }

  const PairToExport& pair_;
  const TokenDecoder* decoder_;
  RowWriter& writer_;
  bool diverged_ = false;
  std::uint64_t clusters_ = 0, last_flip_ = 0;
};

// Every repeat of every compared cell against its reference run; the baseline's repeats
// after its first against that first.
std::vector<PairToExport> PairsOf(const Report& report) {
  std::vector<PairToExport> pairs;
  for (const WorkloadReport& w : report.workloads) {
    const Repeatability& base = w.baseline.repeats;
    if (w.baseline.status == CellStatus::kCompared) {
      for (std::size_t i = 1; i < base.run_ids.size(); ++i) {
        pairs.push_back(
            {&w, &w.baseline, base.run_repeats[i], base.run_ids[i], base.run_ids[0], base.noise});
      }
    }
    for (const CellReport& c : w.cells) {
      if (c.status != CellStatus::kCompared) continue;
      for (std::size_t i = 0; i < c.repeats.run_ids.size(); ++i) {
        pairs.push_back({&w, &c, c.repeats.run_repeats[i], c.repeats.run_ids[i], c.reference_run,
                         c.noise_band});
      }
    }
  }
  return pairs;
}

Status ExportPair(const PairToExport& pair, RunSource& source, const TokenDecoder* decoder,
                  RowWriter& writer) {
  PairRows rows(pair, decoder, writer);
  Status row_error;
  Status scanned =
      ScanPaired(source, pair.reference_run, pair.run,
                 [&](const digest::PositionRecord* p, const digest::PositionRecord* q) {
                   if (p == nullptr || q == nullptr) return true;
                   row_error = rows.Add(*p, *q);
                   return row_error.ok();
                 });
  ORCH_RETURN_IF_ERROR(scanned);
  return row_error.WithContext("export run " + pair.run + " against " + pair.reference_run);
}

}  // namespace

Result<PositionFormat> PositionFormatOf(std::string_view path) {
  std::string lower(path);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto ends_with = [&lower](std::string_view suffix) {
    return lower.size() > suffix.size() && lower.ends_with(suffix);
  };
  if (ends_with(".csv")) return PositionFormat::kCsv;
  if (ends_with(".json")) return PositionFormat::kJson;
  return InvalidArgument(std::string(path) +
                         ": the file name must end in .csv or .json (the export's format)");
}

Status WritePositions(const Report& report, RunSource& source, const TokenDecoder* decoder,
                      PositionFormat format, std::ostream& out) {
  RowWriter writer(format, out);
  writer.Begin(report.experiment);
  for (const PairToExport& pair : PairsOf(report)) {
    ORCH_RETURN_IF_ERROR(ExportPair(pair, source, decoder, writer));
    if (!out) return Internal("cannot write the per-position export");
  }
  writer.End();
  if (!out.flush()) return Internal("cannot write the per-position export");
  return Status();
}

}  // namespace orch::report
