#include "coordinator/plan_catalog.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"
#include "coordinator/matchmaker.h"
#include "plan_document/job_spec.h"
#include "planner/plan_ids.h"

namespace orch::coordinator {
namespace {

using nlohmann::json;

Status Field(const std::string& field, const std::string& rule) {
  return InvalidArgument("plan." + field + ": " + rule);
}

// Experiment and workload names: 1-128 letters, digits, '-', '_' or '.', not
// only dots (the planner's rule, docs/spec.md).
bool IsName(const std::string& text) {
  if (text.empty() || text.size() > 128 || text.find_first_not_of('.') == std::string::npos) {
    return false;
  }
  for (unsigned char c : text) {
    if (std::isalnum(c) == 0 && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

Status CheckName(const std::string& name, const std::string& field) {
  if (IsName(name)) return Status::Ok();
  return Field(field, "invalid name " + json(name).dump() +
                          "; expected 1-128 letters, digits, '-', '_' or '.'");
}

// Job ids are 32 lowercase hex digits (planner/job_id.h).
Status CheckJobId(const std::string& id, const std::string& field) {
  bool hex = id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (hex) return Status::Ok();
  return Field(field, "must be 32 lowercase hex digits (a job id), got " + json(id).dump());
}

Status CheckWorkloads(const ParsedPlan& plan) {
  std::set<std::string> names;
  for (const plan_document::Workload& w : plan.workloads) {
    ORCH_RETURN_IF_ERROR(CheckName(w.name, "workloads[].name"));
    if (!names.insert(w.name).second) {
      return Field("workloads[].name", "duplicate workload " + w.name);
    }
  }
  return Status::Ok();
}

Status CheckJobs(const ParsedPlan& plan) {
  if (plan.jobs.empty()) return Field("jobs", "a plan needs at least one job");
  std::set<std::string_view> ids;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    const PlannedJob& job = plan.jobs[i];
    std::string at = "jobs[" + std::to_string(i) + "].";
    ORCH_RETURN_IF_ERROR(CheckJobId(job.id, at + "id"));
    if (!ids.insert(job.id).second) return Field(at + "id", "duplicate job id " + job.id);
    if (job.workload == plan_document::kNone) {
      return Field(at + "workload", "unknown workload " + job.unknown_workload);
    }
    if (job.requirements == plan_document::kNone) {
      return Field(at + "requirements", "required object");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ParsedPlan> ParsePlanJson(std::string_view text, PlanSource source) {
  ParsedPlan plan;
  ORCH_ASSIGN_OR_RETURN(static_cast<plan_document::Document&>(plan),
                        plan_document::ReadPlanJson(text));
  ORCH_RETURN_IF_ERROR(CheckName(plan.experiment, "experiment.name"));
  ORCH_RETURN_IF_ERROR(CheckWorkloads(plan));
  ORCH_RETURN_IF_ERROR(CheckJobs(plan));
  // Last, so that a plan with a field of the wrong type hears about that field.
  if (source == PlanSource::kPeer) ORCH_RETURN_IF_ERROR(planner::CheckPlanJobIds(plan));
  plan.json_sha256 = Sha256Hex(text);
  // Dispatch needs jobs, workloads, coordinates and requirements; the cells, axes and
  // warnings are for people (reports read them from the stored text). A plan of a cell
  // per job would otherwise hold every cell twice over.
  plan.cells = {};
  plan.axes = {};
  plan.warnings = {};
  return plan;
}

store::PlanRecord ToPlanRecord(const ParsedPlan& plan, std::string json) {
  return {plan.experiment, std::move(json)};
}

std::vector<store::JobRecord> ToJobRecords(const ParsedPlan& plan, std::int64_t submitted_at_ms) {
  std::vector<store::JobRecord> jobs;
  jobs.reserve(plan.jobs.size());
  for (const PlannedJob& job : plan.jobs) {
    store::JobRecord record;
    record.id = job.id;
    record.experiment = plan.experiment;
    record.submitted_at_ms = submitted_at_ms;
    jobs.push_back(std::move(record));
  }
  return jobs;
}

PlanCatalog::PlanCatalog(const PlanCatalog& other) { *this = other; }

PlanCatalog& PlanCatalog::operator=(const PlanCatalog& other) {
  if (this == &other) return *this;
  plans_.clear();
  plans_.reserve(other.plans_.size());
  for (const auto& plan : other.plans_) plans_.push_back(std::make_unique<ParsedPlan>(*plan));
  return *this;
}

std::uint32_t PlanCatalog::Add(ParsedPlan plan) {
  for (std::uint32_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i]->experiment == plan.experiment) {
      *plans_[i] = std::move(plan);
      return i;
    }
  }
  plans_.push_back(std::make_unique<ParsedPlan>(std::move(plan)));
  return static_cast<std::uint32_t>(plans_.size() - 1);
}

const ParsedPlan* PlanCatalog::Find(std::string_view experiment) const {
  for (const auto& plan : plans_) {
    if (plan->experiment == experiment) return plan.get();
  }
  return nullptr;
}

protocol::Assign PlanCatalog::MakeAssign(std::uint32_t plan_index, const PlannedJob& job) const {
  const ParsedPlan& plan = *plans_[plan_index];
  const plan_document::Workload& workload = plan.workloads[job.workload];
  protocol::Assign assign;
  assign.job_id = job.id;
  assign.workload = workload.name;
  assign.requirements = plan.requirements[job.requirements];
  if (job.coordinate != plan_document::kNone) {
    for (const auto& [axis, value] : plan.coordinates[job.coordinate]) {
      assign.coordinate.push_back({axis, plan_document::ScalarText(value)});
    }
  }
  assign.job_spec = plan_document::WriteJobSpec(plan, job);
  return assign;
}

}  // namespace orch::coordinator
