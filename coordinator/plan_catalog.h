// PlanCatalog: the submitted experiments as the coordinator needs them to hand
// out jobs.
//
// Reads the orch.plan/1 JSON (docs/plan-json.md) that `orch submit` sends and
// that the store keeps, and holds per experiment what an Assign carries: each
// job's coordinate, workload and requirements, and the workload_spec JSON
// {"experiment", "job", "workload", "model"}. Requirements are interned: jobs
// point at one shared copy. The catalog never changes a job's state (JobTable
// does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "protocol/messages.h"
#include "store/records.h"

namespace orch::coordinator {

// One job of a plan, as parsed.
struct PlannedJob {
  std::string id;
  std::string cell;         // "baseline", "kv=q8_0"; may be empty
  std::uint32_t repeat = 0;
  std::uint32_t workload = 0;     // index into ParsedPlan::workload_names
  std::uint32_t requirement = 0;  // index into ParsedPlan::requirements
  std::string job_json;           // the job object of the plan, compact JSON
};

struct ParsedPlan {
  std::string experiment;  // the plan's id in the store and its name
  std::string
      json_sha256;  // of the document as submitted (the store keeps the text)
  std::string model_json;     // compact
  std::string baseline_json;  // compact; "null" when the plan has none
  std::vector<std::string> workload_names;
  std::vector<std::string>
      workload_json;  // compact, parallel to workload_names
  // Most positions a job of the workload can have (teacher_forced: positions,
  // generate: max_tokens); 0 when the plan does not say. Parallel too.
  std::vector<std::uint64_t> workload_positions;
  std::vector<protocol::Requirements> requirements;
  std::vector<PlannedJob> jobs;  // in plan order
};

// The most jobs and workloads one plan may have.
inline constexpr std::size_t kMaxPlanJobs = 1'000'000;
inline constexpr std::size_t kMaxPlanWorkloads = 10'000;

// Where a plan document comes from.
enum class PlanSource {
  kPeer,   // a Submit: every job id is recomputed from its canonical form
  kStore,  // the store's copy, checked when it was submitted
};

// Parses and checks an orch.plan/1 document: names as the planner allows them,
// at least one job, job ids of the planner's form and unique, workloads unique,
// every field of the right type, and from a peer, every job id the one `orch plan`
// gives that job (planner/plan_ids.h). InvalidArgument naming the field otherwise.
Result<ParsedPlan> ParsePlanJson(std::string_view json, PlanSource source = PlanSource::kPeer);

// The plan's experiment.name, read without building the document (it stops
// there); "" when the text is not JSON or has none.
std::string ExperimentNameOf(std::string_view json);

// The store records for a parsed plan (`json`: its text): the plan and every
// job as pending.
store::PlanRecord ToPlanRecord(const ParsedPlan& plan, std::string_view json);
std::vector<store::JobRecord> ToJobRecords(const ParsedPlan& plan);

class PlanCatalog final {
 public:
  PlanCatalog() = default;
  // A copy holds copies of the plans: parsed documents are small next to parsing
  // them again (CoordinatorService's snapshot constructor relies on this).
  PlanCatalog(const PlanCatalog& other);
  PlanCatalog& operator=(const PlanCatalog& other);
  PlanCatalog(PlanCatalog&&) = default;
  PlanCatalog& operator=(PlanCatalog&&) = default;

  // Adds an experiment; replaces one of the same name. Returns its index.
  std::uint32_t Add(ParsedPlan plan);
  const ParsedPlan* Find(std::string_view experiment) const;
  const ParsedPlan& plan(std::uint32_t index) const { return *plans_[index]; }
  std::uint32_t size() const {
    return static_cast<std::uint32_t>(plans_.size());
  }

  // The Assign for `job` of plan `plan_index`, without run id and lease.
  protocol::Assign MakeAssign(std::uint32_t plan_index,
                              const PlannedJob& job) const;

 private:
  std::vector<std::unique_ptr<ParsedPlan>> plans_;  // stable addresses
};

}  // namespace orch::coordinator
