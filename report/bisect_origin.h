// Where a bisection from the store starts (`orch bisect A B`, docs/bisect.md): the two
// stored runs it was given, how far apart they are where they ran (the comparison of
// `orch report --by-host`, report/host_compare.h) and how their hosts and engine builds
// differ (report/fingerprint_pairs.h). The axes a bisection switches are measured on one
// machine; what the hosts add is not an axis, and is said as "the rest: host/hardware"
// beside what the axes reproduce.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/host_compare.h"
#include "report/report.h"
#include "report/run_source.h"
#include "store/records.h"

namespace orch::report {

// One end as the store has it.
struct BisectEnd {
  std::string given;  // the id as the user wrote it
  std::string experiment = {};
  std::string job_id = {};
  std::string cell = {};
  std::string workload = {};
  int repeat = 0;
  RunIdentity run = {};  // run_id empty when the job has no usable run
};

struct BisectOrigin {
  BisectEnd a;
  BisectEnd b;
  bool same_coordinate = false;  // A and B ran the same coordinate, workload and model
  // B's run against A's; its note says why they were not compared.
  HostRun compared = {};
  std::vector<FingerprintComparison> fingerprints = {};  // host, then engine
  // The same host fingerprint (engine builds may differ: the engine is an axis).
  bool same_host() const { return a.run.host == b.run.host; }
};

// Compares B's run with A's (both usable runs of one workload) and their fingerprints;
// a missing run is a note on `compared`, never an error.
void CompareOriginRuns(RunSource& source, const store::RunRecord* a, const store::RunRecord* b,
                       bool generate, BisectOrigin& origin);

// The origin in words: what A and B are, their divergence where they ran, and how their
// hosts differ. With `total_kld` (the bisection's KLD(to, from) on this machine), what
// the axes reproduce of it; the rest is the hosts'.
std::vector<std::string> BisectOriginLines(const BisectOrigin& origin,
                                           std::optional<double> total_kld);

}  // namespace orch::report
