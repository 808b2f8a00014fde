// Renderings of a Report (report.h). Columns and fields are documented in docs/report.md.
// All are pure: a Report in, text out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "report/bisect_origin.h"
#include "report/host_compare.h"
#include "report/report.h"

namespace orch::report {

inline constexpr std::size_t kDefaultTextWidth = 100;

struct TextOptions {
  // No line is wider than this (in code points): long lines wrap, tables too wide are
  // split into column groups that repeat the first column, and a cell wider than a line
  // is cut with "…".
  std::size_t width = kDefaultTextWidth;
};

// Terminal tables shaped like the seed study's result tables.
std::string RenderText(const Report& report, const TextOptions& options = {});

// The bisection section alone (docs/bisect.md): the verdict in words and its tables.
// With `origin` (`orch bisect A B`), what A and B are and the rest: host/hardware after
// the verdict.
std::string RenderBisectText(const BisectReport& report, const TextOptions& options = {},
                             const BisectOrigin* origin = nullptr);
// Two stored runs in words: what each is, their divergence, their hosts; with
// `total_kld`, what the bisection's axes reproduce of it.
std::string RenderOriginText(const BisectOrigin& origin, std::optional<double> total_kld,
                             const TextOptions& options = {});
// Schema "orch.bisect/1": the report's "bisect" object with the experiment's name, and
// with `origin` where the bisection started from two stored runs (`orch bisect A B`).
std::string RenderBisectJson(const std::string& experiment, const BisectReport& report,
                             const BisectOrigin* origin = nullptr);
// Schema "orch.bisect/1" of two stored runs of one coordinate: verdict "same_coordinate"
// and the origin alone (nothing was bisected).
std::string RenderOriginJson(const BisectOrigin& origin);

// Schema "orch.report/1": one JSON object, pretty-printed, trailing newline.
std::string RenderJson(const Report& report);

// One header line, then one row per workload and cell (the baseline first). RFC 4180
// quoting; NaN and absent values are empty fields.
std::string RenderCsv(const Report& report);

// One self-contained HTML document (no scripts, no external resources): the tables, one
// inline SVG plot per compared cell (KLD and top-1 flips against position), and the
// fingerprint differences.
std::string RenderHtml(const Report& report);

// `orch report --by-host`: per pair of fingerprint classes (report/host_compare.h), the
// fingerprint fields that differ, once per pair of hosts, then a table of the runs.
std::string RenderHostText(const HostReport& report, const TextOptions& options = {});
// Schema "orch.report-hosts/2" (docs/report.md), pretty-printed, trailing newline.
std::string RenderHostJson(const HostReport& report);

}  // namespace orch::report
