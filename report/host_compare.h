// `orch report --by-host`: every job whose usable runs come from more than one host or
// fingerprint class, each such run against the job's reference run (the one that stands
// for the job in the report, report/job_runs.h): whether its stream is bit-identical,
// where it first differs, its KLD and top-1 agreement (report/pair_compare.h). Runs that
// differ from their reference the same way (the same pair of fingerprint classes, or of
// hosts where a class is unknown) are grouped, and the fingerprint fields that differ
// (report/fingerprint_pairs.h) are given once per pair of hosts in the group, not once per
// job. A run on the reference's own host but of another class (another engine build,
// driver or model file there) is listed like a run on another host. docs/report.md
// documents the output.
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

// One job's run on the other side against the job's reference run.
struct HostRun {
  PlannedJob job = {};
  RunIdentity reference = {};
  RunIdentity run = {};
  bool same_stream = false;  // bit-identical to the reference
  std::optional<std::uint64_t> first_difference = {};
  // The full-row KLD mean that rests on the most positions (report/kld_figure.h), else
  // the returned top-k mean (top-k-only rows); with its n and 95% interval
  // (report/intervals.h: block bootstrap over the positions).
  double kld_mean = std::numeric_limits<double>::quiet_NaN();
  std::string kld_method = "none";  // "exact", "bound", "returned top-k (K=..)" or "none"
  std::uint64_t kld_n = 0;
  Interval kld_ci95 = {};
  double top1_agreement = std::numeric_limits<double>::quiet_NaN();
  Estimate top1_estimate = {};  // the same with its n and Wilson interval
  std::string note = {};        // why the streams could not be compared; empty when they were
};

// The fingerprint differences between one reference host and one other host: host, then
// engine (CompareFingerprints), from the first pair of runs between them.
struct HostDifference {
  std::string reference_host = {};
  std::string other_host = {};
  std::vector<FingerprintComparison> fingerprints = {};
};

// Runs that differ from their jobs' reference runs the same way.
struct HostPair {
  std::string reference_class = {};  // empty when unknown (then one host per side)
  std::string other_class = {};
  std::vector<std::string> reference_hosts = {};  // distinct, in order seen
  std::vector<std::string> other_hosts = {};
  std::vector<HostDifference> differences = {};  // one per distinct pair of hosts
  std::vector<HostRun> runs = {};                // in plan order
  int bit_identical() const;
};

struct HostReport {
  std::string experiment = {};
  int jobs_total = 0;
  int jobs_listed = 0;  // jobs with a run on another host or class than their reference's
  std::vector<HostPair> pairs = {};  // in order of their first run in plan order
};

// Fills `row`'s comparison of `other` against `reference` (both runs of one workload):
// stream, first difference, KLD and top-1 agreement; a pair that cannot be compared
// sets row.note.
void CompareRuns(RunSource& source, const store::RunRecord& reference,
                 const store::RunRecord& other, bool generate, HostRun& row);

// Errors: InvalidArgument for an unreadable plan. A pair that cannot be compared is a note
// on its row, not an error.
Result<HostReport> BuildHostReport(const ExperimentInput& input, RunSource& source);

}  // namespace orch::report
