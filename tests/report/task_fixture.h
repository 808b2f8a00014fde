// The experiment "tasks" for the task outcome tests, written into a store: a generate
// task "triage" (exact-match checks, evaluated by TaskFixtureCatalog) and a
// multiple-choice task "pick", each case run under baseline (2 repeats), kv=q4_0 and
// quant=q8_0 (1 repeat). Every row is a two-peak row (report_fixture.h), so each generated
// token's top-1 minus top-2 margin is set by construction.
//
// triage (expected text: the letters of the expected tokens, token t's text is "a" + t):
// - c1: every run generates 1 2 3: passes everywhere.
// - c2: expects 1 2 3 4. The baseline's repeat 1 moves the top logit of token 1 by
//   kC2RepeatShift (repeat noise); kv=q4_0 departs at token index 2 (position
//   kFirstGenerated + 2): baseline 3 (margin kC2BaselineMargin < the shift) -> 5 (margin
//   kC2CellMargin): a near-tie that fails the case.
// - c3: expects 1 6 6. quant=q8_0 departs at index 1: baseline 6 (margin kC3BaselineMargin)
//   -> 7 (margin kC3CellMargin): a real margin that fails the case.
// - c4: expects 2 2. The baseline's repeat 1 generates 2 3 (fails): unstable; kv=q4_0
//   generates 2 3 too. Its check gives an ordinal distance (letters apart: 1 for "cd").
// - c5: expects 3 3. The baseline generates 3 4 (fails on both repeats); quant=q8_0
//   generates 3 3 (fixed).
// pick (multiple choice, answer 0; the continuation is positions 2 and 3, target token
// kPickTarget whose logit is given per choice, every other logit 0):
// - q1: baseline choice logits (3, 1); quant=q8_0 (1, 3.5): picks 1.
// - q2: the same everywhere (2, 0).
// - q3: baseline (2.05, 2); quant=q8_0 (2, 2.05): a near-tie.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "report/task_cases.h"
#include "store/store.h"

namespace orch::report::testing {

inline constexpr std::uint64_t kFirstGenerated = 4;  // position of the first generated token
inline constexpr double kC2RepeatShift = 0.1;
inline constexpr double kC2BaselineMargin = 0.05;
inline constexpr double kC2CellMargin = 0.02;
inline constexpr double kC3BaselineMargin = 3.0;
inline constexpr double kC3CellMargin = 1.0;
inline constexpr std::int32_t kPickTarget = 5;
// Every triage run says it rendered its messages with this chat template.
inline constexpr const char* kTriageTemplate =
    "5e3c9a0b1d2f4e6a8c7b9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c";

// A variation: the job of `failed_case` under `failed_cell` (repeat 0) fails with
// `failure` instead of running.
struct TaskExperimentOptions {
  std::string failed_cell, failed_case;
  std::string failure = "driver exited with status 3: out of memory";
};

void BuildTaskExperiment(store::Store& store, const TaskExperimentOptions& options = {});

// The text a run of `tokens` generates (token t is the letter 'a' + t).
std::string TaskFixtureText(const std::vector<std::int32_t>& tokens);
// log p(kPickTarget) of a row whose kPickTarget logit is `logit`, every other 0.
double TaskFixtureLogProb(double logit);

// The fixture's checks: triage cases pass on their expected text exactly; pick has three
// two-choice cases with answer 0.
class TaskFixtureCatalog final : public TaskCatalog {
 public:
  TaskFixtureCatalog();
  const std::vector<TaskCaseInfo>* Cases(std::string_view workload) const override;
  TaskVerdict Evaluate(std::string_view workload, std::string_view case_id,
                       std::string_view text) const override;

 private:
  std::vector<TaskCaseInfo> triage_, pick_;
};

}  // namespace orch::report::testing
