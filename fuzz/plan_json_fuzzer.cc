// plan_json_fuzzer: one input is an orch.plan/1 document as `orch submit` sends
// it (docs/plan-json.md). The coordinator's parser must accept it or refuse it
// with a Status; an accepted plan must give store records (one per job) and an
// Assign for every job, as the coordinator would build them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/plan_catalog.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  (void)orch::coordinator::ExperimentNameOf(json);
  orch::Result<orch::coordinator::ParsedPlan> plan = orch::coordinator::ParsePlanJson(json);
  if (!plan.ok()) return 0;
  FUZZ_EXPECT(orch::coordinator::ToJobRecords(*plan).size() == plan->jobs.size());
  (void)orch::coordinator::ToPlanRecord(*plan, std::string(json));
  orch::coordinator::PlanCatalog catalog;
  std::uint32_t index = catalog.Add(*plan);
  for (const orch::coordinator::PlannedJob& job : catalog.plan(index).jobs) {
    (void)catalog.MakeAssign(index, job);
  }
  return 0;
}
