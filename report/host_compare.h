// `orch report --by-host`: for every job whose usable runs come from more than one host
// fingerprint, each such run against the job's reference run (the one that stands for the
// job in the report, report/job_runs.h): whether its stream is bit-identical, where it
// first differs, its KLD and top-1 agreement (report/pair_compare.h), and the fingerprint
// fields that differ (report/fingerprint_pairs.h). docs/report.md documents the output.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "report/plan_view.h"
#include "report/report.h"
#include "report/run_identity.h"
#include "report/run_source.h"

namespace orch::report {

struct HostRun {
  RunIdentity run = {};
  bool reference = false;    // the job's reference run; the other fields are then unset
  bool same_stream = false;  // bit-identical to the reference
  std::optional<std::uint64_t> first_difference = {};
  // The exact KLD mean when the pair has exact positions, else the bound mean, else the
  // returned top-k mean (top-k-only rows).
  double kld_mean = std::numeric_limits<double>::quiet_NaN();
  std::string kld_method = "none";  // "exact", "bound", "returned top-k (K=..)" or "none"
  double top1_agreement = std::numeric_limits<double>::quiet_NaN();
  std::vector<FingerprintComparison> fingerprints = {};  // host, then engine, vs the reference
  std::string note = {};  // why the streams could not be compared; empty when they were
};

struct HostJob {
  PlannedJob job = {};
  int hosts = 0;                   // distinct recorded host fingerprint ids among its usable runs
  std::vector<HostRun> runs = {};  // the reference first, then its runs on other hosts
};

struct HostReport {
  std::string experiment = {};
  int jobs_total = 0;
  std::vector<HostJob> jobs = {};  // the jobs run on more than one host, in plan order
};

// Errors: InvalidArgument for an unreadable plan. A pair that cannot be compared is a note
// on its row, not an error.
Result<HostReport> BuildHostReport(const ExperimentInput& input, RunSource& source);

}  // namespace orch::report
