// The TaskCatalog of a plan: the cases and checks that its task workloads hold (the case
// file's content, copied into the plan by the planner; docs/tasks.md), evaluated with the
// task library.
#pragma once

#include <memory>

#include "base/status.h"
#include "report/plan_view.h"
#include "report/task_cases.h"

namespace orch::report {

// InvalidArgument naming the task workload and the case file line when its cases do not
// parse.
Result<std::unique_ptr<TaskCatalog>> MakePlanTaskCatalog(const PlanView& plan);

}  // namespace orch::report
