// `orch bisect A B`: a bisection from two runs or jobs of a store (docs/bisect.md). A and
// B are run ids, job ids, or a job id's first characters (at least 6; `orch history`
// prints 12), each optionally @HOST: the job's run on that host fingerprint (as `orch
// report --by-host` names it), contributor or agent. Each stands for its job's
// coordinate, workload and model, and for the run compared (a job's: the run the report
// compares, report/job_runs.h). The two must have run one workload of one model; B's
// coordinate may not name an axis A's lacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/bisect_spec_text.h"
#include "report/bisect_origin.h"

namespace orch::cli {

struct StoredBisectOptions {
  std::string store_dir;  // where A and B are
  std::string name;       // the bisection's experiment; "" for bisect-<A12>-<B12>
  double tolerance = 0.05;
  int max_rounds = 4;
};

struct StoredBisect {
  // The spec to run; empty workload name when A and B ran the same coordinate.
  planner::BisectSpecSource source;
  report::BisectOrigin origin;
  // The stored model's files where the spec that planned A named them, when they are
  // still there (absolute paths); the agents are offered them.
  std::vector<std::string> model_files;
};

// Errors name A or B and the value: an unknown or ambiguous id (InvalidArgument), two
// models, two workloads, an axis only B has.
Result<StoredBisect> PrepareStoredBisect(const std::string& a, const std::string& b,
                                         const StoredBisectOptions& options);

}  // namespace orch::cli
