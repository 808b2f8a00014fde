// Per-position export of a report's comparisons (docs/report.md, "Per-position export"):
// one row per cell, workload, repeat and position, with the metrics the report aggregates
// (target log-probability of each side, KLD and its kind, top-1 ids, margin, flip,
// near-tie, flip cluster).
//
// Which pairs: every available repeat of every compared cell against the cell's reference
// run (the baseline's first available repeat), and the baseline's other repeats against
// that same run. Positions present on both sides only. Near-ties follow the report's rule
// with the cell's noise band (the baseline's repeats: their repeat noise).
//
// Streamed: each pair is read through report/paired_scan.h and every row is written to
// the stream as it is made, so memory does not depend on the number of positions.
#pragma once

#include <ostream>
#include <string_view>

#include "base/status.h"
#include "report/report.h"
#include "report/run_source.h"

namespace orch::report {

enum class PositionFormat { kCsv, kJson };

// By the file name's extension, ".csv" or ".json" (case-insensitive). InvalidArgument
// naming the path otherwise.
Result<PositionFormat> PositionFormatOf(std::string_view path);

// Writes the export of `report` (built from `source` by BuildReport) to `out`. CSV: one
// header line, one line per row, RFC 4180 quoting, absent values empty. JSON: schema
// "orch.positions/1", {"schema", "experiment", "columns", "rows": [one object per row]}.
// `decoder` may be null (token text left empty). Errors: the source's, a comparison's
// (runs not comparable), and a failed write of `out`.
Status WritePositions(const Report& report, RunSource& source, const TokenDecoder* decoder,
                      PositionFormat format, std::ostream& out);

}  // namespace orch::report
