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

}  // namespace
}  // namespace orch::report
