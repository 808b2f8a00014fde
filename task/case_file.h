// A task workload's case file (docs/tasks.md): JSONL, one case per line, each with a
// prompt or chat messages and either checks or multiple choices. Parsed whole, every
// error naming FILE:LINE, the case id when known, the field and the value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "task/checks.h"

namespace orch::task {

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
};

struct TaskCase {
  std::string id;
  int line = 0;                       // in the case file, 1-based
  std::optional<std::string> prompt;  // exactly one of prompt and messages
  std::vector<ChatMessage> messages;
  std::optional<int> max_tokens;         // else the workload's
  std::vector<std::string> checks_json;  // each check's JSON (all must pass)
  std::vector<CheckPtr> checks;          // parsed, same order
  std::vector<std::string> choices;      // multiple choice: >= 2
  int answer = -1;                       // multiple choice: 0-based
  bool multiple_choice() const { return !choices.empty(); }
};

inline constexpr std::size_t kMaxCases = 100'000;

// Parses the content of the case file `file`. InvalidArgument "FILE:LINE: case ID: field:
// what" for the first bad line; duplicate ids and an empty file are errors.
Result<std::vector<TaskCase>> ParseCaseFile(std::string_view content, const std::string& file);

// A case passes when every one of its checks passes: the first failing check's verdict,
// or a pass.
Verdict EvaluateCase(const TaskCase& task_case, std::string_view output);

}  // namespace orch::task
