// PlanCatalog: the submitted experiments as the coordinator needs them to hand
// out jobs.
//
// Reads the orch.plan/1 JSON (docs/plan-json.md) that `orch submit` sends and
// that the store keeps, once, into the typed document, and makes from it what an
// Assign carries: each job's coordinate, workload and requirements, and the
// job_spec JSON {"experiment", "job", "workload", "model"}. Coordinates and
// requirements are interned: jobs point at one shared copy. The catalog never
// changes a job's state (JobTable does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan_document/plan_document.h"
#include "plan_document/plan_json.h"
#include "protocol/messages.h"
#include "store/records.h"

namespace orch::coordinator {

// One job of a plan: its id, cell, workload, repeat and the interned coordinate and
// requirements it points at.
using PlannedJob = plan_document::Job;

// A submitted plan: the typed document (read once, plan_document/plan_json.h) plus what
// the coordinator derives from it. `experiment` is the plan's id in the store and its
// name; jobs are in plan order and each has requirements (checked). The cells, axes and
// warnings are not kept (empty): nothing in the coordinator reads them.
struct ParsedPlan : plan_document::Document {
  std::string json_sha256;  // of the document as submitted (the store keeps the text)
};

// The most jobs and workloads one plan may have.
inline constexpr std::size_t kMaxPlanJobs = plan_document::kMaxJobs;
inline constexpr std::size_t kMaxPlanWorkloads = plan_document::kMaxWorkloads;

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

using plan_document::ExperimentNameOf;

// The store records for a parsed plan (`json`: its text): the plan and every
// job as pending, submitted at `submitted_at_ms` (jobs already stored keep theirs:
// Store::PutPlan writes only new ones).
store::PlanRecord ToPlanRecord(const ParsedPlan& plan, std::string json);
std::vector<store::JobRecord> ToJobRecords(const ParsedPlan& plan,
                                           std::int64_t submitted_at_ms = 0);

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
  std::uint32_t size() const { return static_cast<std::uint32_t>(plans_.size()); }

  // The Assign for `job` of plan `plan_index`, without run id and lease.
  protocol::Assign MakeAssign(std::uint32_t plan_index, const PlannedJob& job) const;

 private:
  std::vector<std::unique_ptr<ParsedPlan>> plans_;  // stable addresses
};

}  // namespace orch::coordinator
