// Which runs of a job count: the usable ones (succeeded and complete), and among them the
// one that stands for the job in comparisons (the job's current run preferred, else the
// first usable one in run id order). A job may have several usable runs: the lab's and
// contributors' imported runs of the same coordinate (docs/report.md).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "store/records.h"

namespace orch::report {

// Label of the runs of the lab's own connected agents (RunRecord::contributor empty).
inline constexpr const char* kLabContributor = "lab";

bool Usable(const store::RunRecord& run);

// The contributor a run counts for: its bundle's key name, or kLabContributor.
std::string ContributorOf(const store::RunRecord& run);

// Jobs by id and their runs, borrowed from vectors that must outlive the index.
class JobRuns {
 public:
  JobRuns(const std::vector<store::JobRecord>& jobs, const std::vector<store::RunRecord>& runs);

  const store::JobRecord* Job(const std::string& job_id) const;  // null when unknown
  // Every run of the job, in input order.
  const std::vector<const store::RunRecord*>& Runs(const std::string& job_id) const;
  // The usable runs, in input order.
  std::vector<const store::RunRecord*> UsableRuns(const std::string& job_id) const;
  // The run that stands for the job; null when it has no usable run.
  const store::RunRecord* Chosen(const std::string& job_id) const;

 private:
  std::unordered_map<std::string, const store::JobRecord*> jobs_;
  std::unordered_map<std::string, std::vector<const store::RunRecord*>> runs_;
};

}  // namespace orch::report
