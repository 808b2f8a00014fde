// What a report must say about its own numbers: the places where what was compared is
// less than what the plan requested. Pure: the plan's request and what the runs hold in,
// warnings out. docs/report.md lists the kinds and their wording.
//
// - "positions_short": a teacher-forced comparison covers fewer positions than the
//   workload's `positions` (a run holds fewer records than requested).
// - "generation_short": a run generated fewer tokens than the workload's `max_tokens`.
//   When its driver gave a stop reason, a run is short unless the reason is "max_tokens";
//   without one, when its generated-token count is below max_tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "digest/stream_compare.h"
#include "report/plan_view.h"
#include "report/run_extent.h"

namespace orch::report {

struct Warning {
  std::string kind;     // "positions_short" or "generation_short"
  std::string message;  // one line, for people
};

// The warnings about one run on its own; `who` names it in the message ("baseline run").
std::vector<Warning> RunWarnings(const PlannedWorkload& workload, std::string_view who,
                                 const RunExtent& run);

// A teacher-forced comparison of `summary` against the requested positions; nullopt when
// every requested position was compared or the plan requested no count.
std::optional<Warning> ComparedWarning(const PlannedWorkload& workload,
                                       const digest::StreamSummary& summary);

// Whether `run` generated fewer tokens than `max_tokens` (rule above).
bool GenerationShort(const RunExtent& run, std::uint64_t max_tokens);

}  // namespace orch::report
