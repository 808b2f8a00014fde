// The task outcome tables (docs/report.md, "Task outcomes"), shared by the terminal and
// HTML renderings like report/tables.h.
#pragma once

#include <string>

#include "report/report.h"
#include "report/tables.h"

namespace orch::report {

// Per cell (the baseline first): pass rate with its Wilson interval, cases, repeats, the
// outcome changes against the baseline (near-tie / real margin / unknown), broken and
// fixed, the changes on cases the baseline itself flips on, and the pooled KLD.
Table TaskPassRateTable(const TaskWorkloadReport& task);
// Every changed case whose baseline is stable, with its post-mortem (generate cases) or
// the chosen choices and margins (multiple choice), and the check that failed.
Table TaskChangeTable(const TaskWorkloadReport& task);
// The changed cases the baseline's own repeats disagree on (reported apart).
Table TaskUnstableTable(const TaskWorkloadReport& task);
// Multiple choice: per case, the answer and the choice each cell picks, with the margin
// between its best two choices. No rows without multiple-choice cases.
Table TaskChoiceTable(const TaskWorkloadReport& task);
// Report::by_outcome_changes.
Table OutcomeAttributionTable(const Report& report);

// "pass" / "fail" of a case's first repeat; "-" without an outcome.
std::string TaskOutcomeText(const TaskCaseOutcome& outcome);
// The post-mortem in one line: "token 3 after \"Gi0/0/\": 49 \"1\" (margin 2.000) -> 52
// \"4\" (margin 0.5000); real margin (noise band 0.1000)".
std::string TaskPostMortemText(const TaskPostMortem& p);
// A changed multiple-choice case in one line: "choice 0 (margin 1.950) -> choice 1 (margin
// 2.164); real margin (noise band 0.7018)".
std::string TaskChoiceChangeText(const TaskCaseOutcome& base, const TaskCaseOutcome& cell);
// The failed check's reason of whichever side failed (the cell's first).
std::string TaskFailedCheck(const TaskCaseOutcome& base, const TaskCaseOutcome& cell);
// The baseline's outcome of case `id`; null when it has none.
const TaskCaseOutcome* TaskBaselineOutcome(const TaskWorkloadReport& task, const std::string& id);

}  // namespace orch::report
