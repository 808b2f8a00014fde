#include "report/task_catalog.h"

namespace orch::report {
namespace {

class PlanTaskCatalog final : public TaskCatalog {
 public:
  const std::vector<TaskCaseInfo>* Cases(std::string_view) const override { return nullptr; }
  TaskVerdict Evaluate(std::string_view, std::string_view, std::string_view) const override {
    return {};
  }
};

}  // namespace

Result<std::unique_ptr<TaskCatalog>> MakePlanTaskCatalog(const PlanView&) {
  return std::unique_ptr<TaskCatalog>(std::make_unique<PlanTaskCatalog>());
}

}  // namespace orch::report
