// Job ids recomputed from a plan document (docs/plan-json.md).
//
// A plan that reaches the coordinator comes from a peer, which may have edited it. Every
// job's id is the hash of its canonical form (planner/job_id.h), and the document carries
// everything that form is made of: the experiment name, each workload (whose digest is
// recomputed here, not read), each job's coordinate, repeat and model requirement. So
// the coordinator can check that every id is the one `orch plan` would give that job,
// with this library's rule rather than a copy of it.
#pragma once

#include "base/status.h"
#include "plan_document/plan_document.h"

namespace orch::planner {

// Ok when every job of `plan` has the id of its canonical form. InvalidArgument
// naming the first field the form needs that the document lacks
// ("plan.workloads[1].capture.top_logits: required integer ...") or the first job whose id
// differs ("plan.jobs[3].id: ..."). Types were checked when the document was read.
Status CheckPlanJobIds(const plan_document::Document& plan);

}  // namespace orch::planner
