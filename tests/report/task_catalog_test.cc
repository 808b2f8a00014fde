// The plan's task catalog: the cases a task workload carries in the plan, evaluated
// with the task library's checks (docs/tasks.md).
#include "report/task_catalog.h"
#include "report/task_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace orch::report {
namespace {

PlanView PlanWithCases(const std::string& cases) {
  PlanView plan;
  nlohmann::json workload = {
      {"name", "calls"}, {"kind", "task"}, {"cases_file", "calls.jsonl"}, {"cases", cases}};
  plan.tasks.push_back({"calls", workload.dump()});
  return plan;
}

TEST(PlanTaskCatalogTest, ListsTheCasesAndJudgesOutputsWithTheirChecks) {
  Result<std::unique_ptr<TaskCatalog>> catalog = MakePlanTaskCatalog(PlanWithCases(
      R"J({"id": "port", "prompt": "p", "checks": [{"regex": "port (\\d+)", "group": 1, "then": {"number": 5432}}]})J"
      "\n"
      R"J({"id": "mc", "prompt": "q", "choices": ["a", "b", "c"], "answer": 2})J"));
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  const std::vector<TaskCaseInfo>* cases = (*catalog)->Cases("calls");
  ASSERT_NE(cases, nullptr);
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].id, "port");
  EXPECT_EQ((*cases)[0].prompt, "p");
  EXPECT_FALSE((*cases)[0].multiple_choice());
  EXPECT_EQ((*cases)[1].choices, 3);
  EXPECT_EQ((*cases)[1].answer, 2);
  EXPECT_TRUE((*catalog)->Evaluate("calls", "port", "listen port 5432").pass);
  TaskVerdict lost = (*catalog)->Evaluate("calls", "port", "listen port 543ql");
  EXPECT_FALSE(lost.pass);
  EXPECT_EQ(lost.reason, R"J(in "543": expected 5432, got 543)J");
  EXPECT_EQ((*catalog)->Cases("other"), nullptr);
}

TEST(PlanTaskCatalogTest, CasesThatDoNotParseAreAnErrorNamingTheFileAndLine) {
  Result<std::unique_ptr<TaskCatalog>> catalog =
      MakePlanTaskCatalog(PlanWithCases("{\"id\": \"a\", \"prompt\": \"p\"}"));
  ASSERT_FALSE(catalog.ok());
  EXPECT_EQ(catalog.status().message(),
            "calls.jsonl:1: case a: give either checks or choices and answer, got neither");
}

// A post-mortem at the first generated tokens shows the prompt's end; a cut never starts
// inside a UTF-8 sequence.
TEST(PlanTaskCatalogTest, APromptTailIsCutAtACharacterBoundary) {
  EXPECT_EQ(TaskPromptTail("short", 32), "short");
  EXPECT_EQ(TaskPromptTail("abcdef", 3), "def");
  // "é" is two bytes (C3 A9): a 4-byte cut of "xé" + "abc" would start at A9.
  EXPECT_EQ(TaskPromptTail("x\xC3\xA9"
                           "abc",
                           4),
            "abc");
  EXPECT_EQ(TaskPromptTail("x\xC3\xA9"
                           "abc",
                           5),
            "\xC3\xA9"
            "abc");
}

}  // namespace
}  // namespace orch::report
