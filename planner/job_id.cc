#include "planner/job_id.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "planner/canonical_json.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

using json = nlohmann::json;

json CaptureJson(const CapturePolicy& capture) {
  json windows = json::array();
  for (const auto& [begin, end] : capture.full_windows) {
    windows.push_back(json::array({begin, end}));
  }
  // top_logits keeps the key it had before its rename ("top_k"): the canonical form is
  // what job ids hash, and the ids of stored runs stay theirs (docs/spec.md, "Job ids").
  json out = {{"full_every", capture.full_every},
              {"full_windows", std::move(windows)},
              {"top_k", capture.top_logits}};
  // Only a budget the spec changed is part of the id: the ids of specs written before
  // the budget existed stay those of their stored runs.
  if (capture.full_row_budget_bytes != kDefaultFullRowBudgetBytes) {
    out["full_row_budget_bytes"] = capture.full_row_budget_bytes;
  }
  return out;
}

}  // namespace

std::string CanonicalWorkload(const Workload& w) {
  json out = {
      {"capture", CaptureJson(w.capture)}, {"kind", WorkloadKindName(w.kind)}, {"name", w.name}};
  if (w.kind == WorkloadKind::kGenerate) {
    out["max_tokens"] = w.max_tokens;
    out["prompt"] = w.prompt;
    if (!w.messages.empty()) {
      json messages = json::array();
      for (const plan_document::ChatMessage& m : w.messages)
        messages.push_back({{"content", m.content}, {"role", m.role}});
      out["messages"] = std::move(messages);
    }
  } else if (w.context) {
    out["context"] = *w.context;
    out["continuation"] = w.continuation;
  } else {
    out["positions"] = w.positions;
    if (!w.tokens.empty()) {
      out["tokens"] = w.tokens;
    } else {
      out["text"] = w.text;
    }
  }
  // A task case's workload names its task, case and choice: the same prompt in two
  // cases is two jobs, each judged by its own checks. Absent elsewhere, so the ids of
  // other workloads are those they always had.
  if (w.task) {
    json task = {{"case", w.task->case_id}, {"workload", w.task->workload}};
    if (w.task->choice) task["choice"] = *w.task->choice;
    out["task"] = std::move(task);
  }
  return CanonicalJsonText(out);
}

std::string WorkloadDigest(const Workload& workload) {
  return Sha256Hex(CanonicalWorkload(workload));
}

std::string CanonicalAxes(const Coordinate& coordinate, WorkloadKind kind) {
  json out = json::object();
  for (const auto& [axis, value] : coordinate) {
    if (AxisApplies(axis, kind)) out[axis] = AxisValueJson(value);
  }
  return CanonicalJsonText(out);
}

std::string CanonicalJob(const std::string& canonical_axes, const std::string& experiment,
                         const std::string& model, int repeat, const std::string& workload_digest) {
  // Written member by member, not as a json tree: this runs once per job, and a tree (a
  // std::map and its strings) made bench/plan_bench's 18,150-job expansion 40% slower
  // (46 ms against 33 ms). Same bytes as CanonicalJsonText of the tree, which
  // tests/planner/canonical_json_golden_test.cc pins. The axes arrive as text, one per
  // cell shared by its jobs; "axes" sorts before every other key.
  std::string out = "{\"axes\":" + canonical_axes + ",\"experiment\":";
  AppendJsonString(out, experiment);
  out += ",\"model\":";
  AppendJsonString(out, model);
  out += ",\"repeat\":" + std::to_string(repeat) + ",\"workload\":";
  AppendJsonString(out, workload_digest);
  return out + "}";
}

std::string JobIdOf(const std::string& canonical_job) {
  return Sha256Hex(canonical_job).substr(0, kJobIdHexDigits);
}

}  // namespace orch::planner
