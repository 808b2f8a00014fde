#include "task/case_file.h"

#include <nlohmann/json.hpp>

#include <set>

namespace orch::task {
namespace {

using Json = nlohmann::json;

bool ValidCaseId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return id.find_first_not_of('.') != std::string::npos;
}

std::string CaseShown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

Result<std::vector<ChatMessage>> ReadMessages(const Json& list, const std::string& where) {
  if (!list.is_array() || list.empty()) {
    return InvalidArgument(where + ": expected a non-empty array of {role, content}, got " +
                           CaseShown(list));
  }
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    const Json& m = list[i];
    if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
        !m["content"].is_string() || m.size() != 2) {
      return InvalidArgument(at + ": expected {\"role\": ..., \"content\": \"...\"}, got " +
                             CaseShown(m));
    }
    std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant") {
      return InvalidArgument(at + ".role: \"" + role + "\" is not system, user or assistant");
    }
    out.push_back({role, m["content"]});
  }
  return out;
}

Status ReadAnswerKind(const Json& line, const std::string& where, TaskCase& c) {
  bool has_checks = line.contains("checks");
  bool has_choices = line.contains("choices");
  if (has_checks == has_choices) {
    return InvalidArgument(where + ": give either checks or choices and answer, " +
                           (has_checks ? std::string("not both") : std::string("got neither")));
  }
  if (has_checks) {
    const Json& checks = line["checks"];
    if (!checks.is_array() || checks.empty()) {
      return InvalidArgument(where + ".checks: expected a non-empty array of checks, got " +
                             CaseShown(checks));
    }
    for (std::size_t i = 0; i < checks.size(); ++i) {
      std::string text = checks[i].dump();
      ORCH_ASSIGN_OR_RETURN(CheckPtr check,
                            ParseCheck(text, where + ".checks[" + std::to_string(i) + "]"));
      c.checks_json.push_back(std::move(text));
      c.checks.push_back(std::move(check));
    }
    return Status::Ok();
  }
  const Json& choices = line["choices"];
  if (!choices.is_array() || choices.size() < 2) {
    return InvalidArgument(where + ".choices: expected at least two strings, got " +
                           CaseShown(choices));
  }
  for (const Json& choice : choices) {
    if (!choice.is_string() || choice.get<std::string>().empty()) {
      return InvalidArgument(where + ".choices: expected non-empty strings, got " +
                             CaseShown(choice));
    }
    c.choices.push_back(choice);
  }
  if (!line.contains("answer") || !line["answer"].is_number_unsigned() ||
      line["answer"].get<std::size_t>() >= c.choices.size()) {
    return InvalidArgument(where + ".answer: expected the index of the right choice, 0.." +
                           std::to_string(c.choices.size() - 1) + ", got " +
                           (line.contains("answer") ? CaseShown(line["answer"]) : "nothing"));
  }
  c.answer = line["answer"].get<int>();
  return Status::Ok();
}

Result<TaskCase> ReadCase(const Json& line, const std::string& at) {
  if (!line.is_object()) return InvalidArgument(at + ": expected a JSON object per line");
  static const std::set<std::string> kKnown = {"id",     "prompt",  "messages", "max_tokens",
                                               "checks", "choices", "answer"};
  TaskCase c;
  if (!line.contains("id") || !line["id"].is_string() ||
      !ValidCaseId(line["id"].get<std::string>())) {
    return InvalidArgument(at + ": id: expected 1-128 of A-Z a-z 0-9 - _ ., got " +
                           (line.contains("id") ? CaseShown(line["id"]) : "nothing"));
  }
  c.id = line["id"];
  std::string where = at + ": case " + c.id;
  for (const auto& [key, value] : line.items()) {
    if (!kKnown.contains(key)) return InvalidArgument(where + ": " + key + ": unknown field");
  }
  if (line.contains("prompt") == line.contains("messages")) {
    return InvalidArgument(where + ": give exactly one of prompt and messages");
  }
  if (line.contains("prompt")) {
    if (!line["prompt"].is_string() || line["prompt"].get<std::string>().empty()) {
      return InvalidArgument(where + ".prompt: expected a non-empty string, got " +
                             CaseShown(line["prompt"]));
    }
    c.prompt = line["prompt"].get<std::string>();
  } else {
    ORCH_ASSIGN_OR_RETURN(c.messages, ReadMessages(line["messages"], where + ".messages"));
  }
  if (line.contains("max_tokens")) {
    const Json& max = line["max_tokens"];
    if (!max.is_number_unsigned() || max.get<std::uint64_t>() < 1 ||
        max.get<std::uint64_t>() > 1'000'000) {
      return InvalidArgument(where + ".max_tokens: expected an integer in [1, 1000000], got " +
                             CaseShown(max));
    }
    c.max_tokens = max.get<int>();
  }
  ORCH_RETURN_IF_ERROR(ReadAnswerKind(line, where, c));
  return c;
}

}  // namespace

Result<std::vector<TaskCase>> ParseCaseFile(std::string_view content, const std::string& file) {
  std::vector<TaskCase> cases;
  std::set<std::string> ids;
  int number = 0;
  std::size_t start = 0;
  while (start < content.size()) {
    std::size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view text = content.substr(start, end - start);
    start = end + 1;
    ++number;
    std::string at = file + ":" + std::to_string(number);
    if (TrimSpace(text).empty()) continue;
    Json line = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded()) return InvalidArgument(at + ": not valid JSON");
    ORCH_ASSIGN_OR_RETURN(TaskCase c, ReadCase(line, at));
    c.line = number;
    if (!ids.insert(c.id).second) {
      return InvalidArgument(at + ": case " + c.id + ": id used by an earlier line");
    }
    if (cases.size() == kMaxCases) {
      return InvalidArgument(at + ": more than " + std::to_string(kMaxCases) + " cases");
    }
    cases.push_back(std::move(c));
  }
  if (cases.empty()) return InvalidArgument(file + ": no cases (one JSON object per line)");
  return cases;
}

Verdict EvaluateCase(const TaskCase& task_case, std::string_view output) {
  for (const CheckPtr& check : task_case.checks) {
    Verdict verdict = EvaluateCheck(*check, output);
    if (!verdict.pass) return verdict;
  }
  return Verdict{true, "", std::nullopt};
}

}  // namespace orch::task
