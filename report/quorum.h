// Quorum and conflicts over every usable run of a cell (docs/report.md): the runs are
// grouped by bit-for-bit equal digest streams, and the largest agreeing group says on how
// many hosts, fingerprint classes and contributors the cell's result rests. Every group is
// listed with its size, hosts, classes and contributors; when two or more groups share the
// largest size there is no majority (a 4-4 split is not a quorum of 4). Two runs of the
// same job on one fingerprint class whose streams differ are a conflict: evidence of
// nondeterminism, listed with both runs. Pure: identities and streams in, values out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/run_identity.h"

namespace orch::report {

// One usable run of one of the cell's jobs.
struct CellRun {
  RunIdentity identity = {};
  int repeat = 0;  // of its job
  StreamIdentity stream = {};
};

// One group of runs with bit-identical streams.
struct StreamGroup {
  std::vector<std::string> runs = {};          // run ids, in run order
  std::vector<std::string> hosts = {};         // distinct recorded host fingerprint ids
  std::vector<std::string> classes = {};       // distinct known fingerprint classes
  std::vector<std::string> contributors = {};  // distinct ("lab" first)
};

struct Quorum {
  int runs = 0;     // usable runs of the cell's jobs with a readable stream (all of them)
  int streams = 0;  // distinct digest streams among them
  std::vector<std::string> agreeing_runs = {};  // run ids of the largest group of equal streams
  int hosts = 0;    // distinct recorded host fingerprint ids in that group
  int classes = 0;  // distinct known fingerprint classes in that group
  std::vector<std::string> contributors = {};      // distinct, in that group ("lab" first)
  std::vector<std::string> all_contributors = {};  // distinct, over every run of the cell
  int unreadable = 0;  // usable runs whose stream could not be read; not counted above
  // Every group of equal streams, largest first; among equal sizes the agreeing group
  // (above) first, then in order of their first run.
  std::vector<StreamGroup> groups = {};
  // One group is larger than every other (true for a single group; false for a tie).
  bool majority() const {
    return groups.size() < 2 || groups[0].runs.size() > groups[1].runs.size();
  }
  bool rests_on_one_contributor() const { return all_contributors.size() == 1; }
};

struct Conflict {
  int repeat = 0;
  RunIdentity a = {};  // the earlier of the two in the job's run order
  RunIdentity b = {};
  // The first position where the streams differ; set by the report (not by FindConflicts).
  std::optional<std::uint64_t> first_difference = {};
};

// Ties between groups of equal size go to the group holding `preferred_run` (the run the
// cell's comparisons use), then to the group whose first run comes first.
Quorum BuildQuorum(const std::vector<CellRun>& runs, const std::string& preferred_run);

// Every pair of runs of one job with the same known fingerprint class and different
// streams, in run order. Runs on different classes are never conflicts.
std::vector<Conflict> FindConflicts(const std::vector<CellRun>& runs);

// Distinct contributors, "lab" first, then in name order.
std::vector<std::string> DistinctContributors(const std::vector<std::string>& names);

}  // namespace orch::report
