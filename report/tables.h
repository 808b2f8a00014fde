// The report's tables as rows of text, shared by the terminal and HTML renderings so
// that both show the same columns (docs/report.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "report/report.h"

namespace orch::report {

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// `value` to `digits` significant digits: fixed notation for magnitudes in [0.001, 1e6)
// ("1.460", "0.06170", "12.98"), exponent form otherwise ("4.1e-14", "2.29e-06"); "0" only
// for exact zero, so a small nonzero value never prints as zero; "-" for NaN.
std::string FormatNumber(double value, int digits);
// A KLD in nats: FormatNumber with 4 significant digits.
std::string FormatKld(double value);
// 0.95238 -> "95.24%": 4 significant digits, more when needed so that a fraction below one
// never shows as "100.0%"; "-" for NaN.
std::string FormatPercent(double fraction);
// "[lo, hi]" with `format`; empty when there is no interval.
std::string FormatInterval(const Interval& ci, const std::function<std::string(double)>& format);
// "0.06170 [0.02101, 0.1103] n=40"; "0.2500 (no interval) n=1"; "-" when n is 0.
std::string FormatEstimate(double mean, std::uint64_t n, const Interval& ci,
                           const std::function<std::string(double)>& format);
// "17" or "17 \"math\"": the text in quotes, with quotes, backslashes and control
// characters escaped C-style (a newline token shows as "\n"), so a table row stays one line.
std::string FormatToken(const Token& token);

// The status line: experiment, job counts, and whether the report is partial.
std::string StatusLine(const Report& report);
// "reference: baseline repeat 0 (run R)", or why there is none.
std::string ReferenceLine(const WorkloadReport& workload);

// "model: NAME (ID)", "model files: ...", "baseline: axis=value, ...", "hosts: ...",
// "engine builds: ...": one line each, empty ones left out.
std::vector<std::string> ProvenanceLines(const Report& report);
// A token's text for reading in context: the text as it is (escaped as FormatToken does),
// or "<ID>" when unknown.
std::string TokenText(const Token& token);

Table WarningTable(const WorkloadReport& workload);
Table RepeatabilityTable(const WorkloadReport& workload);
// Every cell with usable runs: its quorum (report/quorum.h); and the conflicts, if any.
Table QuorumTable(const WorkloadReport& workload);
Table ConflictTable(const WorkloadReport& workload);
// Every group of equal streams (Quorum::groups) of each cell with more than one.
Table StreamGroupTable(const WorkloadReport& workload);
// "lab on fp-a (agent agent-1)": who ran a run, and where.
std::string RunOrigin(const RunIdentity& run);
Table CellTable(const WorkloadReport& workload);      // teacher-forced
Table GenerateTable(const WorkloadReport& workload);  // generate
// Exact, top-k bound and returned top-k KLD statistics apart, one row per compared cell
// (teacher-forced).
Table KldTable(const WorkloadReport& workload);
Table FlipTable(const WorkloadReport& workload, std::size_t per_cell);
Table ClusterTable(const WorkloadReport& workload, std::size_t per_cell);
Table FingerprintTable(const WorkloadReport& workload);
// Every requested-vs-effective difference (report/effective.h), the baseline's first,
// then one row per cell that ran the baseline's effective configuration, with its note.
Table EffectiveTable(const WorkloadReport& workload);
// Report::by_kld and Report::by_top1, each figure with n and its interval, and whether it
// is separable from the rank above.
Table AttributionTable(const Report& report);
Table Top1AttributionTable(const Report& report);
// Report::by_kld_returned_top_k, with its basis on every row; no rows when empty.
Table ReturnedTopKAttributionTable(const Report& report);

}  // namespace orch::report
