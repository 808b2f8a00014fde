// Task outcomes beside logits (docs/report.md, "Task outcomes"): per task workload and
// cell, the pass rate with its Wilson interval, the cases whose outcome differs from the
// baseline's (and the cases the baseline's own repeats disagree on, apart), and for each
// changed case its post-mortem: the first generated token where the cell departs from the
// baseline, both tokens with the shared tokens before them, both sides' top-1 minus top-2
// margin there, whether that was a near-tie (the report's noise-band rule, applied to the
// case), and which check failed. Multiple-choice cases: the choice each cell picks by
// summed continuation log-likelihood and the margin between the best two. Axes are ranked
// by outcome changes (with the pooled KLD beside).
//
// BuildTaskReports is pure apart from the RunSource it reads and the TaskCatalog that
// evaluates the checks.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/intervals.h"
#include "report/plan_view.h"
#include "report/run_source.h"
#include "report/task_cases.h"
#include "store/records.h"

namespace orch::report {

// Shared generated tokens shown before a departure.
inline constexpr std::size_t kTaskContext = 4;
inline constexpr std::size_t kTaskPromptTail = 32;

// The last `bytes` bytes of `prompt` or fewer, never starting inside a UTF-8 sequence.
std::string TaskPromptTail(const std::string& prompt, std::size_t bytes = kTaskPromptTail);

// The first generated token where a cell departs from the baseline (both first repeats).
struct TaskPostMortem {
  std::uint64_t index = 0;     // 0-based index into the generated tokens
  std::uint64_t position = 0;  // the record position of that token (the side that has it)
  // Both sides' tokens there; id -1 for a side whose generation had already ended.
  std::int32_t baseline_token = -1, cell_token = -1;
  std::optional<std::string> baseline_text, cell_text;
  // The shared generated tokens before the departure (at most kTaskContext), oldest first.
  std::vector<std::int32_t> context;
  std::vector<std::optional<std::string>> context_text;
  // When fewer than kTaskContext tokens were generated before the departure: the end of
  // the case's prompt (at most kTaskPromptTail bytes, cut at a UTF-8 boundary); else "".
  std::string prompt_tail;
  bool prompt_cut = false;  // the tail is shorter than the prompt
  // Top-1 minus top-2 logit of each side's row at the departure; NaN when unknown.
  double baseline_margin = std::numeric_limits<double>::quiet_NaN();
  double cell_margin = std::numeric_limits<double>::quiet_NaN();
  double noise_band = 0.0;  // the near-tie threshold for this case (docs/report.md)
  bool near_tie = false;    // baseline_margin <= noise_band; false when the margin is unknown
};

// One repeat of a case under one cell.
struct TaskCaseRun {
  int repeat = 0;
  std::vector<std::string> runs;  // the run (one per choice for multiple choice)
  bool pass = false;
  std::string reason;  // the failed check's reason (evaluator's words); empty when it passed
  std::optional<double> distance;  // an ordinal label's distance, when the check gave one
  std::string text;                // the generated text (empty for multiple choice)
  int chosen = -1;                 // multiple choice: the choice with the largest loglik
  std::vector<double> logliks;     // multiple choice: per choice, summed over its tokens
  double choice_margin = std::numeric_limits<double>::quiet_NaN();  // best minus second
};

// How a changed case is counted: after a near-tie, after a real margin, or unknown
// (margin not captured).
enum class TaskChangeKind { kNone, kNearTie, kRealMargin, kUnknownMargin };
std::string_view TaskChangeKindName(TaskChangeKind kind);

struct TaskCaseOutcome {
  std::string id;
  int answer = -1;                // multiple choice: the right choice
  std::string missing;            // why there is no outcome (not finished, failed); else empty
  std::vector<TaskCaseRun> runs;  // available repeats, in repeat order
  bool has_outcome() const { return !runs.empty(); }
  bool pass() const { return has_outcome() && runs.front().pass; }  // the first repeat's
  int passes() const;
  bool repeats_agree() const;  // every repeat has the same pass/fail
  // Against the baseline (cells only): the first repeats' outcomes differ.
  bool changed = false;
  bool baseline_unstable = false;  // the baseline's own repeats disagree on this case
  TaskChangeKind change = TaskChangeKind::kNone;
  std::optional<TaskPostMortem> post_mortem;  // generate cases that changed
  // Multiple choice: the choice margin band used for change (see docs/report.md).
  double choice_noise_band = std::numeric_limits<double>::quiet_NaN();
  std::string note;  // why a changed case has no post-mortem; comparison errors
};

struct TaskCellReport {
  PlannedCell cell;
  std::string status = "compared";  // "compared", "no_runs", "no_baseline"
  std::string reason;
  int cases_planned = 0;
  int cases = 0;                         // cases with an outcome
  int repeats = 0;                       // the most repeats any case has
  std::uint64_t trials = 0, passes = 0;  // over every repeat of every case
  Estimate pass_rate;                    // passes / trials, Wilson
  // Against the baseline: cases whose first-repeat outcome differs, the baseline stable on
  // them (near_tie + real_margin + unknown_margin = changed), those the baseline itself
  // flips on (unstable), and the directions of the stable ones.
  std::uint64_t changed = 0, near_tie = 0, real_margin = 0, unknown_margin = 0;
  std::uint64_t unstable = 0, broken = 0, fixed = 0;
  std::uint64_t choice_changes = 0;  // multiple choice: cases whose chosen choice differs
  // Ordinal label checks: the mean distance of the judged runs that gave one (0 for a
  // right label), and how many gave one; NaN with n 0 when none did.
  double distance_mean = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t distance_n = 0;
  // KLD against the baseline pooled over the cases' compared positions (exact when every
  // pair has exact positions, else bound where not); NaN with n 0 when none.
  double kld_mean = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t kld_n = 0;
  // The chat templates (done.chat_template.sha256) its runs rendered messages with,
  // sorted, distinct: part of what a cell ran (docs/report.md). Empty for raw prompts.
  std::vector<std::string> chat_templates;
  std::vector<TaskCaseOutcome> outcomes;  // in case-file order
};

struct TaskWorkloadReport {
  std::string name;
  bool multiple_choice = false;  // some case is multiple choice
  std::string error;             // why it could not be reported (its cases unknown); else empty
  TaskCellReport baseline;
  std::vector<TaskCellReport> cells;  // in plan order
};

// Axes ranked by outcome changes: each axis by its cell with the most changes (ties: the
// larger pooled KLD), strongest first.
struct OutcomeRank {
  std::string axis, cell, workload;
  std::uint64_t changed = 0, near_tie = 0, real_margin = 0, unstable = 0;
  int cases = 0;
  double pass_rate_delta = std::numeric_limits<double>::quiet_NaN();  // cell - baseline
  double kld_mean = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t kld_n = 0;
};

// How a planned job stands: finished with a run, not finished, or failed.
struct TaskJobState {
  enum Kind { kDone, kInProgress, kFailed } kind = kInProgress;
  const store::RunRecord* run = nullptr;  // kDone only
  std::string reason;                     // kFailed only
};
using TaskJobResolver = std::function<TaskJobState(const std::string& job_id)>;

// Errors: the source's when a run's records do not decode.
Result<std::vector<TaskWorkloadReport>> BuildTaskReports(const PlanView& plan,
                                                         const TaskJobResolver& resolve,
                                                         RunSource& source,
                                                         const TaskCatalog& catalog);

std::vector<OutcomeRank> RankAxesByOutcome(const std::vector<TaskWorkloadReport>& tasks);

}  // namespace orch::report
