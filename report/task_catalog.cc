#include "report/task_catalog.h"

#include <map>
#include <nlohmann/json.hpp>

#include "task/case_file.h"

namespace orch::report {
namespace {

// The cases of every task workload of a plan, parsed once with the task library.
class PlanTaskCatalog final : public TaskCatalog {
 public:
  const std::vector<TaskCaseInfo>* Cases(std::string_view workload) const override {
    auto it = workloads_.find(std::string(workload));
    return it == workloads_.end() ? nullptr : &it->second.infos;
  }

  TaskVerdict Evaluate(std::string_view workload, std::string_view case_id,
                       std::string_view text) const override {
    auto it = workloads_.find(std::string(workload));
    if (it == workloads_.end()) return {false, "no task workload " + std::string(workload), {}};
    for (const task::TaskCase& c : it->second.cases) {
      if (c.id != case_id) continue;
      task::Verdict verdict = task::EvaluateCase(c, text);
      return {verdict.pass, verdict.reason, verdict.distance};
    }
    return {false, "no case " + std::string(case_id) + " in " + std::string(workload), {}};
  }

  // A task workload as the plan holds it: {"name", "kind": "task", "cases_file": FILE,
  // "cases": the file's content} (docs/tasks.md).
  Status Add(const PlannedTaskWorkload& planned) {
    nlohmann::json doc = nlohmann::json::parse(planned.json, nullptr, false);
    if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_string()) {
      return InvalidArgument("task workload " + planned.name +
                             ": the plan holds no \"cases\" text for it");
    }
    std::string file = doc.contains("cases_file") && doc["cases_file"].is_string()
                           ? doc["cases_file"].get<std::string>()
                           : planned.name;
    ORCH_ASSIGN_OR_RETURN(std::vector<task::TaskCase> cases,
                          task::ParseCaseFile(doc["cases"].get<std::string>(), file));
    Entry& entry = workloads_[planned.name];
    for (const task::TaskCase& c : cases) {
      const std::string prompt =
          c.prompt ? *c.prompt : (c.messages.empty() ? "" : c.messages.back().content);
      entry.infos.push_back({c.id, static_cast<int>(c.choices.size()), c.answer, prompt});
    }
    entry.cases = std::move(cases);
    return Status::Ok();
  }

 private:
  struct Entry {
    std::vector<TaskCaseInfo> infos;
    std::vector<task::TaskCase> cases;
  };
  std::map<std::string, Entry> workloads_;
};

}  // namespace

Result<std::unique_ptr<TaskCatalog>> MakePlanTaskCatalog(const PlanView& plan) {
  auto catalog = std::make_unique<PlanTaskCatalog>();
  for (const PlannedTaskWorkload& planned : plan.tasks) {
    ORCH_RETURN_IF_ERROR(catalog->Add(planned));
  }
  return std::unique_ptr<TaskCatalog>(std::move(catalog));
}

}  // namespace orch::report
