// What a report needs of a task workload's cases (docs/tasks.md): their ids in case-file
// order, the multiple-choice answer, and the verdict of a case's checks on a generated
// text. The report reads cases only through TaskCatalog; report/task_catalog.h makes one
// from the task workloads a plan holds, and tests may supply their own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::report {

struct TaskCaseInfo {
  std::string id;
  int choices = 0;  // multiple choice: how many (>= 2); 0 for a case with checks
  int answer = -1;  // multiple choice: the right choice, 0-based
  // The text the model continued: the prompt, or a chat case's last message (a
  // post-mortem shows its end before a departure at the first generated tokens).
  std::string prompt;
  bool multiple_choice() const { return choices > 0; }
};

// A case's checks on one output: pass, and when not, which check failed and why (the
// evaluator's reason); the ordinal distance of a label check when it has one.
struct TaskVerdict {
  bool pass = false;
  std::string reason;
  std::optional<double> distance;
};

class TaskCatalog {
 public:
  virtual ~TaskCatalog() = default;
  // The cases of the task workload `workload`, in case-file order; null when unknown.
  virtual const std::vector<TaskCaseInfo>* Cases(std::string_view workload) const = 0;
  // The checks of case `case_id` of `workload` on the generated `text`.
  virtual TaskVerdict Evaluate(std::string_view workload, std::string_view case_id,
                               std::string_view text) const = 0;
};

}  // namespace orch::report
