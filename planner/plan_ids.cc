#include "planner/plan_ids.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/job_id.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

// "plan.FIELD: RULE (it makes the job ids)".
Status Missing(const std::string& field, const char* type) {
  return InvalidArgument("plan." + field + ": required " + type + " (it makes the job ids)");
}

// An int as the planner holds it; the document may hold a wider integer.
template <typename Wide>
Result<int> Int(const std::optional<Wide>& value, const std::string& field) {
  if (!value || *value < INT32_MIN || *value > INT32_MAX) return Missing(field, "integer");
  return static_cast<int>(*value);
}

Result<CapturePolicy> ReadCapture(const plan_document::Workload& w, const std::string& at) {
  if (!w.capture) return Missing(at + "capture", "object");
  CapturePolicy policy;
  ORCH_ASSIGN_OR_RETURN(policy.top_logits, Int(w.capture->top_logits, at + "capture.top_logits"));
  ORCH_ASSIGN_OR_RETURN(policy.full_every, Int(w.capture->full_every, at + "capture.full_every"));
  if (!w.capture->full_windows) return Missing(at + "capture.full_windows", "array");
  for (const auto& window : *w.capture->full_windows) policy.full_windows.push_back(window);
  // Absent in plans written before the budget existed: their jobs had the default.
  policy.full_row_budget_bytes =
      w.capture->full_row_budget_bytes.value_or(kDefaultFullRowBudgetBytes);
  return policy;
}

// The workload as the planner held it (planner/plan_to_json.cc made the document from it).
Result<Workload> ReadWorkload(const plan_document::Workload& in, const std::string& at) {
  Workload w;
  w.name = in.name;
  w.task = in.task;
  if (in.kind == "generate") {
    w.kind = WorkloadKind::kGenerate;
    if (in.messages) {
      w.messages = *in.messages;
    } else if (!in.prompt) {
      return Missing(at + "prompt", "string");
    }
    w.prompt = in.prompt.value_or("");
    ORCH_ASSIGN_OR_RETURN(w.max_tokens, Int(in.max_tokens, at + "max_tokens"));
  } else if (in.kind == "teacher_forced" && in.context) {
    if (!in.continuation) return Missing(at + "continuation", "string");
    w.context = in.context;
    w.continuation = *in.continuation;
  } else if (in.kind == "teacher_forced") {
    ORCH_ASSIGN_OR_RETURN(w.positions, Int(in.positions, at + "positions"));
    if (in.tokens) {
      w.tokens = *in.tokens;
    } else if (in.text) {
      w.text = *in.text;
    } else {
      return Missing(at + "text", "string");
    }
  } else if (in.kind.empty()) {
    return Missing(at + "kind", "string");
  } else {
    return InvalidArgument("plan." + at +
                           "kind: must be \"teacher_forced\", \"generate\" or \"task\", got " +
                           nlohmann::json(in.kind).dump());
  }
  ORCH_ASSIGN_OR_RETURN(w.capture, ReadCapture(in, at));
  return w;
}

AxisValue ValueOf(const plan_document::Scalar& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return AxisValue::String(*s);
  if (const auto* i = std::get_if<std::int64_t>(&value)) return AxisValue::Int(*i);
  if (const auto* d = std::get_if<double>(&value)) return AxisValue::Float(*d);
  return AxisValue::Bool(std::get<bool>(value));
}

// Each workload of the plan read back (a task workload as an empty one: its case file
// runs through its per-case workloads, and no job names it).
Result<std::vector<Workload>> ReadWorkloads(const plan_document::Document& plan) {
  std::vector<Workload> workloads;
  for (std::size_t i = 0; i < plan.workloads.size(); ++i) {
    if (plan.workloads[i].kind == "task") {
      workloads.push_back(Workload{});
      continue;
    }
    ORCH_ASSIGN_OR_RETURN(Workload w,
                          ReadWorkload(plan.workloads[i], "workloads[" + std::to_string(i) + "]."));
    workloads.push_back(std::move(w));
  }
  return workloads;
}

// What a job needs for its id to be recomputed; `at` is "jobs[N].".
Status CheckJobFields(const plan_document::Document& plan, const plan_document::Job& job,
                      const std::string& at) {
  if (job.workload == plan_document::kNone) {
    return InvalidArgument("plan." + at + "workload: unknown workload " + job.unknown_workload);
  }
  if (plan.workloads[job.workload].kind == "task") {
    return InvalidArgument("plan." + at + "workload: " + plan.workloads[job.workload].name +
                           " is a task workload; its jobs run its cases' workloads");
  }
  if (job.coordinate == plan_document::kNone) return Missing(at + "coordinate", "object");
  if (!job.has_repeat) return Missing(at + "repeat", "integer");
  if (job.requirements == plan_document::kNone) return Missing(at + "requirements", "object");
  return Status::Ok();
}

}  // namespace

Status CheckPlanJobIds(const plan_document::Document& plan) {
  ORCH_ASSIGN_OR_RETURN(std::vector<Workload> workloads, ReadWorkloads(plan));
  std::vector<std::string> digests(plan.workloads.size());
  // Jobs share coordinates; each distinct one is made canonical once per workload kind,
  // and dropped after its last job (a plan of a cell per job would otherwise hold a
  // canonical text per job while it is checked).
  std::map<std::pair<std::uint32_t, WorkloadKind>, std::string> axes;
  std::vector<std::uint32_t> jobs_left(plan.coordinates.size());
  for (const plan_document::Job& job : plan.jobs) {
    if (job.coordinate < jobs_left.size()) ++jobs_left[job.coordinate];
  }
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    const plan_document::Job& job = plan.jobs[i];
    std::string at = "jobs[" + std::to_string(i) + "].";
    ORCH_RETURN_IF_ERROR(CheckJobFields(plan, job, at));
    const std::string& model = plan.requirements[job.requirements].model;
    const Workload& workload = workloads[job.workload];
    std::string& canonical = axes[{job.coordinate, workload.kind}];
    if (canonical.empty()) {
      Coordinate coordinate;
      for (const auto& [axis, value] : plan.coordinates[job.coordinate]) {
        coordinate[axis] = ValueOf(value);
      }
      canonical = CanonicalAxes(coordinate, workload.kind);
    }
    std::string& digest = digests[job.workload];
    if (digest.empty()) digest = WorkloadDigest(workload);
    std::string expected = JobIdOf(
        CanonicalJob(canonical, plan.experiment, model, static_cast<int>(job.repeat), digest));
    if (--jobs_left[job.coordinate] == 0) {
      auto first = axes.lower_bound({job.coordinate, WorkloadKind{}});
      auto last = first;
      while (last != axes.end() && last->first.first == job.coordinate) ++last;
      axes.erase(first, last);
    }
    if (job.id != expected) {
      return InvalidArgument("plan." + at + "id: " + job.id +
                             " is not the id of this job's coordinate, workload, repeat and "
                             "model (" +
                             expected +
                             "): make the plan with orch plan, and do "
                             "not edit it");
    }
  }
  return Status::Ok();
}

}  // namespace orch::planner
