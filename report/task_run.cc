#include "report/task_run.h"

#include <charconv>
#include <set>
#include <nlohmann/json.hpp>

namespace orch::report {
namespace {

using TaskJson = nlohmann::json;

double TaskRowMargin(const digest::RowDigest& d) {
  if (d.top.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(d.top[0].logit) - static_cast<double>(d.top[1].logit);
}

std::optional<std::uint64_t> TaskRunCount(const TaskJson& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return std::nullopt;
  const TaskJson& v = object[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) return std::nullopt;
  return v.get<std::uint64_t>();
}

// What the done frame says; a summary that is not JSON says nothing.
void TaskReadDone(const std::string& summary, TaskRunData& out, std::vector<std::int32_t>& ids) {
  if (summary.empty()) return;
  const TaskJson doc = TaskJson::parse(summary, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("done") || !doc["done"].is_object()) return;
  const TaskJson& done = doc["done"];
  if (done.contains("generated_text") && done["generated_text"].is_string()) {
    out.generated_text = done["generated_text"].get<std::string>();
  }
  if (done.contains("generated_ids") && done["generated_ids"].is_array()) {
    for (const TaskJson& id : done["generated_ids"]) {
      if (id.is_number_integer()) ids.push_back(id.get<std::int32_t>());
    }
  }
  if (done.contains("token_text") && done["token_text"].is_object()) {
    for (const auto& [key, text] : done["token_text"].items()) {
      std::int32_t id = -1;
      auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error == std::errc() && end == key.data() + key.size() && text.is_string()) {
        out.token_text[id] = text.get<std::string>();
      }
    }
  }
  if (done.contains("chat_template") && done["chat_template"].is_object()) {
    const TaskJson& t = done["chat_template"];
    if (t.contains("sha256") && t["sha256"].is_string()) {
      out.chat_template = t["sha256"].get<std::string>();
    }
  }
  if (done.contains("continuation")) {
    out.continuation_first = TaskRunCount(done["continuation"], "first_position");
    out.continuation_tokens = TaskRunCount(done["continuation"], "tokens");
  }
}

// Adds one record's target log-probability to the continuation's sum.
void TaskAddTarget(const digest::PositionRecord& r, double& sum, std::uint64_t& seen,
                   std::string& note) {
  ++seen;
  if (r.digest.target_id == digest::kNoTarget || !r.digest.is_distribution()) {
    if (note.empty()) note = "position " + std::to_string(r.position) + " has no target";
    return;
  }
  sum += static_cast<double>(r.digest.target_logit) - r.digest.logsumexp;
}

}  // namespace

std::optional<std::string> TaskTokenText(const TaskRunData& run, std::int32_t token) {
  auto it = run.token_text.find(token);
  if (it == run.token_text.end()) return std::nullopt;
  return it->second;
}

Result<TaskRunData> ReadTaskRun(RunSource& source, const store::RunRecord& run) {
  TaskRunData out;
  std::vector<std::int32_t> done_ids;
  TaskReadDone(run.summary, out, done_ids);
  const bool choice = out.continuation_first && out.continuation_tokens;
  const std::uint64_t first = out.continuation_first.value_or(0);
  const std::uint64_t end = first + out.continuation_tokens.value_or(0);
  double sum = 0.0;
  std::uint64_t seen = 0;
  std::string note;
  ORCH_RETURN_IF_ERROR(source.ScanRecords(run.id, 0, [&](const digest::PositionRecord& r) {
    if (r.output_token >= 0)
      out.steps.push_back({r.position, r.output_token, TaskRowMargin(r.digest)});
    if (choice && r.position >= first && r.position < end) TaskAddTarget(r, sum, seen, note);
    return true;
  }));
  if (out.steps.empty()) {
    for (std::size_t i = 0; i < done_ids.size(); ++i) {
      out.steps.push_back({i, done_ids[i], std::numeric_limits<double>::quiet_NaN()});
    }
  }
  // Only the generated tokens' texts are kept: a report holds the runs of every case.
  std::set<std::int32_t> generated;
  for (const TaskStep& step : out.steps) generated.insert(step.token);
  std::erase_if(out.token_text,
                [&generated](const auto& entry) { return !generated.contains(entry.first); });
  if (choice) {
    if (seen < end - first && note.empty()) {
      note = "continuation positions " + std::to_string(first) + ".." + std::to_string(end - 1) +
             ": " + std::to_string(seen) + " of " + std::to_string(end - first) + " stored";
    }
    out.loglik_note = note;
    if (note.empty()) out.loglik = sum;
  }
  return out;
}

}  // namespace orch::report
