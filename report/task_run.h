// One run of a task case as the report reads it (docs/report.md, "Task outcomes"): from
// the run's `done` frame (store::RunRecord::summary) the generated text, the token texts
// and the multiple-choice continuation span; from its records the generated tokens, each
// with the top-1 minus top-2 logit margin of its row, and the continuation's summed
// log-likelihood. Generated tokens are the records' output tokens in position order; a run
// whose records name none falls back to `done.generated_ids` (margins then unknown).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "report/run_source.h"
#include "store/records.h"

namespace orch::report {

// One generated token.
struct TaskStep {
  std::uint64_t position = 0;
  std::int32_t token = -1;
  // Its row's top-1 minus top-2 logit; NaN when the digest holds one token or none.
  double margin = std::numeric_limits<double>::quiet_NaN();
};

struct TaskRunData {
  std::string generated_text;
  std::vector<TaskStep> steps;                     // in position order
  std::map<std::int32_t, std::string> token_text;  // of the generated tokens only
  // done.chat_template.sha256: the chat template the driver rendered the messages with;
  // empty for a raw prompt.
  std::string chat_template;
  // Multiple choice: done.continuation {first_position, tokens}, and the sum of the target
  // log-probabilities (target_logit - logsumexp) of those positions; NaN with a note when
  // a position is missing or has no target.
  std::optional<std::uint64_t> continuation_first;
  std::optional<std::uint64_t> continuation_tokens;
  double loglik = std::numeric_limits<double>::quiet_NaN();
  std::string loglik_note;  // why loglik is NaN; empty otherwise
};

// The text of `token` in this run's token_text; nullopt when the run does not name it.
std::optional<std::string> TaskTokenText(const TaskRunData& run, std::int32_t token);

// Errors: the source's (a record that does not decode).
Result<TaskRunData> ReadTaskRun(RunSource& source, const store::RunRecord& run);

}  // namespace orch::report
