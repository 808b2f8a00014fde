// How the renderings show generation in full (report/generation.h, docs/report.md
// "Generate workloads"): the terminal and HTML tables, the JSON object of a compared
// generate cell, and the generated texts side by side in HTML. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>

#include "report/tables.h"

namespace orch::report {

// Per compared cell: what the KLD and top-1 figures rest on ("common prefix of N of M
// tokens", positions), those figures with n and 95% intervals, the first divergence's
// kind, both sides' margins there and the noise band they are read against.
Table GenerationTable(const WorkloadReport& workload);

// The first line of each generated text: the baseline's, then each compared cell's
// (escaped as token text is, so a row stays one line); "not recorded" when unknown.
Table GeneratedTextTable(const WorkloadReport& workload);

// The `generation` object of a compared generate cell (docs/report.md, JSON); null when
// the detail does not apply.
nlohmann::ordered_json GenerationJson(const CellReport& cell);

// Per compared cell, the baseline's and the cell's generated texts in full, side by side
// (<table class="generated">, each text in a <td class="generated-text">, newlines kept).
void WriteGeneratedTexts(const WorkloadReport& workload, std::ostringstream& out);

}  // namespace orch::report
