#include "report/plan_view.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace orch::report {
namespace {

TEST(PlanViewTest, ReadsThePlannerGoldenPlan) {
  std::ifstream in(std::string(ORCH_SOURCE_DIR) + "/tests/cli/testdata/seed-replication.plan.json");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  Result<PlanView> view = ParsePlanView(text.str());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->experiment, "seed-replication");
  ASSERT_EQ(view->workloads.size(), 2u);
  EXPECT_EQ(view->workloads[1].kind, WorkloadKind::kGenerate);
  EXPECT_TRUE(view->cells[0].is_baseline());
  EXPECT_EQ(view->cells[1].axis, "engine");
  EXPECT_EQ(view->jobs.size(), 16u);
  EXPECT_EQ(view->jobs[1].repeat, 1);
}

TEST(PlanViewTest, ReadsWhatEachWorkloadRequestsAndCaptures) {
  std::ifstream in(std::string(ORCH_SOURCE_DIR) + "/tests/cli/testdata/seed-replication.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  Result<PlanView> view = ParsePlanView(text.str());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const PlannedWorkload& readme = view->workloads[0];
  EXPECT_EQ(readme.positions, 128u);
  EXPECT_EQ(readme.max_tokens, std::nullopt);
  EXPECT_EQ(readme.top_k, 20);
  EXPECT_EQ(readme.full_every, 32u);
  const PlannedWorkload& reasoning = view->workloads[1];
  EXPECT_EQ(reasoning.max_tokens, 64u);
  EXPECT_EQ(reasoning.positions, std::nullopt);
  EXPECT_EQ(reasoning.full_every, 0u);
}

TEST(PlanViewTest, ReadsTheModelAndTheBaselineCoordinate) {
  Result<PlanView> view = ParsePlanView(R"({"schema": "orch.plan/1",
    "experiment": {"name": "e"}, "workloads": [], "cells": [], "jobs": [],
    "model": {"name": "qwen", "sha256": "ab12"},
    "baseline": {"engine": "llama.cpp@v0.4.0", "tp": 1, "attention": "off"}})");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->model.name, "qwen");
  EXPECT_EQ(view->model.id, "sha256:ab12");
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(view->baseline,
            (std::vector<Pair>{{"attention", "off"}, {"engine", "llama.cpp@v0.4.0"}, {"tp", "1"}}));
  Result<PlanView> synth = ParsePlanView(R"({"schema": "orch.plan/1",
    "experiment": {"name": "e"}, "workloads": [], "cells": [], "jobs": [],
    "model": {"name": "tiny", "synth": "llama:vocab=1024"}})");
  ASSERT_TRUE(synth.ok());
  EXPECT_EQ(synth->model.id, "synth:llama:vocab=1024");
}

TEST(PlanViewTest, FormatsNonStringAxisValuesAsJson) {
  Result<PlanView> view = ParsePlanView(R"({"schema": "orch.plan/1",
    "experiment": {"name": "e"}, "workloads": [],
    "cells": [{"label": "sampler.seed=43", "axis": "sampler.seed", "value": 43}],
    "jobs": []})");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->cells[0].value, "43");
}

TEST(PlanViewTest, RejectsAnotherSchemaAndNamesMissingFields) {
  EXPECT_EQ(ParsePlanView(R"({"schema": "x"})").status().code(), StatusCode::kInvalidArgument);
  Result<PlanView> view = ParsePlanView(R"({"schema": "orch.plan/1",
    "experiment": {"name": "e"}, "workloads": [], "cells": [],
    "jobs": [{"id": "j", "cell": "baseline", "workload": "w"}]})");
  ASSERT_FALSE(view.ok());
  EXPECT_NE(view.status().message().find("jobs[0].repeat"), std::string::npos);
  EXPECT_FALSE(ParsePlanView("not json").ok());
}

TEST(PlanViewTest, TaskWorkloadsAreListedApartAndPerCaseWorkloadsNameTheirCase) {
  Result<PlanView> view = ParsePlanView(R"({"schema": "orch.plan/1",
    "experiment": {"name": "t", "description": ""},
    "workloads": [
      {"name": "triage", "kind": "task", "cases": "..."},
      {"name": "triage.c1", "kind": "generate", "max_tokens": 8,
       "task": {"workload": "triage", "case": "c1"}},
      {"name": "pick.q1.1", "kind": "teacher_forced",
       "task": {"workload": "pick", "case": "q1", "choice": 1}},
      {"name": "odd", "kind": "generate", "task": {"case": 3}}],
    "cells": [{"label": "baseline", "axis": null, "value": null}],
    "jobs": []})");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(view->tasks.size(), 1u);
  EXPECT_EQ(view->tasks[0].name, "triage");
  EXPECT_NE(view->tasks[0].json.find("\"cases\""), std::string::npos);
  ASSERT_EQ(view->workloads.size(), 3u);
  ASSERT_TRUE(view->workloads[0].task.has_value());
  EXPECT_EQ(view->workloads[0].task->workload, "triage");
  EXPECT_EQ(view->workloads[0].task->case_id, "c1");
  EXPECT_EQ(view->workloads[0].task->choice, -1);
  EXPECT_EQ(view->workloads[1].task->choice, 1);
  // A malformed task object leaves an ordinary workload.
  EXPECT_FALSE(view->workloads[2].task.has_value());
}

}  // namespace
}  // namespace orch::report
