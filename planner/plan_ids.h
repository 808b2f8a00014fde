// Job ids recomputed from an orch.plan/1 document (docs/plan-json.md).
//
// A plan that reaches the coordinator comes from a peer, which may have edited it. Every
// job's id is the hash of its canonical form (planner/job_id.h), and the document carries
// everything that form is made of: the experiment name, each workload (whose digest is
// recomputed here, not read), each job's coordinate, repeat and model requirement. So
// the coordinator can check that every id is the one `orch plan` would give that job,
// with this library's rule rather than a copy of it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace orch::planner {

// Ok when every job of `plan` has the id of its canonical form. InvalidArgument
// naming the first field that cannot be read ("plan.workloads[1].capture.top_k: ...")
// or the first job whose id differs ("plan.jobs[3].id: ..."). Never throws.
Status CheckPlanJobIds(const nlohmann::json& plan);

}  // namespace orch::planner
