#include "store/record_owners.h"

#include <optional>

#include "store/codec.h"

namespace orch::store {

std::string PrefixId(std::string_view key) {
  if (key.empty() || static_cast<uint8_t>(key[0]) + 1u > key.size()) return "";
  return std::string(key.substr(1, static_cast<uint8_t>(key[0])));
}

Result<RecordOwners> RecordOwners::Learn(KvEngine& engine) {
  RecordOwners owners;
  ORCH_RETURN_IF_ERROR(
      engine.Scan(Table::kPlanJobs, "", "", [&](std::string_view key, std::string_view) {
        owners.NotePlanJob(key);
        return true;
      }));
  ORCH_RETURN_IF_ERROR(
      engine.Scan(Table::kRuns, "", "", [&](std::string_view key, std::string_view value) {
        owners.NoteRun(key, value);
        return true;
      }));
  return owners;
}

bool RecordOwners::NotePlanJob(std::string_view key) {
  std::string plan = PrefixId(key);
  if (plan.empty()) return false;
  plan_of_job_[std::string(JobIdOfPlanJobKey(key, plan))] = plan;
  return true;
}

std::string RecordOwners::NoteRun(std::string_view key, std::string_view value) {
  std::optional<std::string> job = PeekRunJobId(value);
  if (!job) return "";
  job_of_run_[std::string(key)] = *job;
  return *job;
}

std::string RecordOwners::ExperimentOfJob(std::string_view job) const {
  auto it = plan_of_job_.find(job);
  return it == plan_of_job_.end() ? "" : it->second;
}

std::string RecordOwners::ExperimentOfRun(std::string_view run) const {
  auto it = job_of_run_.find(run);
  return it == job_of_run_.end() ? "" : ExperimentOfJob(it->second);
}

std::string RecordOwners::ExperimentOf(Table table, std::string_view key,
                                       std::string_view value) const {
  switch (table) {
    case Table::kPlans:
      return std::string(key);
    case Table::kPlanJobs:
      return PrefixId(key);
    case Table::kJobs: {
      Result<JobRecord> job = DecodeJob(DescribeKey(table, key), value);
      return job.ok() ? job->experiment : ExperimentOfJob(key);
    }
    case Table::kRuns: {
      std::optional<std::string> job = PeekRunJobId(value);
      return job ? ExperimentOfJob(*job) : ExperimentOfRun(key);
    }
    case Table::kChunks:
    case Table::kDigests:
      return ExperimentOfRun(PrefixId(key));
    case Table::kBundles: {
      Result<BundleRecord> bundle = DecodeBundle(DescribeKey(table, key), value);
      return bundle.ok() ? bundle->experiment : "";
    }
    case Table::kHosts:
    case Table::kEvents:
    case Table::kSigners:
      return "";
  }
  return "";
}

}  // namespace orch::store
