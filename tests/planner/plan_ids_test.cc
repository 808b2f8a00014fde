// The job ids of a plan document recomputed from their canonical form: a plan made by
// orch plan passes, any edit to what an id is made of is named.
#include "planner/plan_ids.h"

#include "plan_document/plan_json.h"
#include "planner/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace orch::planner {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// orch plan's output for examples/seed-replication.toml: teacher_forced and generate
// workloads, string, integer, float and boolean axis values.
json Golden() {
  std::ifstream in(std::filesystem::path(ORCH_SOURCE_DIR) /
                   "tests/cli/testdata/seed-replication.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// The document is read first (types are the reader's), then its ids are checked.
Status Check(const json& plan) {
  Result<plan_document::Document> document = plan_document::ReadPlanJson(plan.dump());
  if (!document.ok()) return document.status();
  return CheckPlanJobIds(*document);
}

std::string Why(const json& plan) { return Check(plan).message(); }

TEST(PlanIdsTest, EveryIdOfAPlanMadeByThePlannerChecksOut) {
  json plan = Golden();
  ASSERT_GE(plan["jobs"].size(), 10u);
  Status status = Check(plan);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(PlanIdsTest, EachPartOfTheCanonicalFormChangesTheIdAndIsNamed) {
  const json golden = Golden();
  const std::string last = "plan.jobs[" + std::to_string(golden["jobs"].size() - 1) + "].id";
  std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"plan.jobs[0].id", [](json& p) { p["jobs"][0]["coordinate"]["quant"] = "q8_0"; }},
      {"plan.jobs[0].id", [](json& p) { p["jobs"][0]["repeat"] = 7; }},
      {"plan.jobs[0].id", [](json& p) { p["jobs"][0]["requirements"]["model"] = "sha256:00"; }},
      {"plan.jobs[0].id", [](json& p) { p["jobs"][0]["coordinate"].erase("kv"); }},
      {"plan.jobs[0].id", [](json& p) { p["experiment"]["name"] = "other"; }},
      {"plan.jobs[0].id", [](json& p) { p["workloads"][0]["text"] = "edited text"; }},
      {"plan.jobs[0].id", [](json& p) { p["workloads"][0]["positions"] = 3; }},
      {"plan.jobs[0].id", [](json& p) { p["workloads"][0]["capture"]["top_logits"] = 5; }},
      {"plan.jobs[0].id",
       [](json& p) { p["workloads"][0]["capture"]["full_row_budget_bytes"] = 0; }},
      {last, [](json& p) { p["jobs"].back()["coordinate"]["sampler.temperature"] = 0.5; }},
      {last, [](json& p) { p["jobs"].back()["id"] = std::string(32, 'a'); }},
  };
  for (auto& [field, edit] : edits) {
    json plan = golden;
    edit(plan);
    EXPECT_THAT(Why(plan), HasSubstr(field + ": ")) << plan.dump().substr(0, 200);
    EXPECT_THAT(Why(plan), HasSubstr("is not the id of this job's coordinate"));
  }
}

TEST(PlanIdsTest, APlanWrittenBeforeTheFullRowBudgetKeepsItsIds) {
  json plan = Golden();
  for (json& workload : plan["workloads"]) {
    ASSERT_EQ(workload["capture"]["full_row_budget_bytes"], kDefaultFullRowBudgetBytes);
    workload["capture"].erase("full_row_budget_bytes");
  }
  Status status = Check(plan);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// Renaming capture.top_k to top_logits changed no job id: a stored plan that says top_k
// checks against the ids it was written with.
TEST(PlanIdsTest, APlanWrittenBeforeTheTopLogitsRenameKeepsItsIds) {
  json plan = Golden();
  for (json& workload : plan["workloads"]) {
    workload["capture"]["top_k"] = workload["capture"]["top_logits"];
    workload["capture"].erase("top_logits");
  }
  Status status = Check(plan);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(PlanIdsTest, AWorkloadsOwnDigestFieldIsNotTrusted) {
  json plan = Golden();
  plan["workloads"][0]["digest"] = std::string(64, '0');
  EXPECT_TRUE(Check(plan).ok()) << "the digest is recomputed, not read";
}

TEST(PlanIdsTest, WhatCannotBeReadIsNamedNeverThrown) {
  std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"plan.workloads[0].capture: required object",
       [](json& p) { p["workloads"][0].erase("capture"); }},
      {"plan.workloads[0].capture.top_logits: required integer",
       [](json& p) { p["workloads"][0]["capture"]["top_logits"] = "20"; }},
      {"plan.workloads[0].capture.full_windows: each window",
       [](json& p) { p["workloads"][0]["capture"]["full_windows"] = json::array({1}); }},
      {"plan.workloads[0].kind: must be", [](json& p) { p["workloads"][0]["kind"] = "sample"; }},
      {"plan.workloads[0].positions: required integer",
       [](json& p) { p["workloads"][0]["positions"] = 1e300; }},
      {"plan.workloads[0].tokens: must be an array of integers",
       [](json& p) {
         p["workloads"][0]["tokens"] = json::array({1, "x"});
       }},
      {"plan.jobs[0].coordinate.kv: must be a string, number or boolean",
       [](json& p) { p["jobs"][0]["coordinate"]["kv"] = json::array(); }},
      {"plan.jobs[0].coordinate.tp: integer out of range",
       [](json& p) { p["jobs"][0]["coordinate"]["tp"] = UINT64_MAX; }},
      {"plan.jobs[0].repeat: required integer", [](json& p) { p["jobs"][0].erase("repeat"); }},
      {"plan.jobs[0].workload: unknown workload",
       [](json& p) { p["jobs"][0]["workload"] = "nope"; }},
      {"plan.jobs[1]: must be an object", [](json& p) { p["jobs"][1] = 5; }},
      {"plan.experiment.name: required string", [](json& p) { p["experiment"]["name"] = 5; }},
  };
  for (auto& [message, edit] : edits) {
    json plan = Golden();
    edit(plan);
    EXPECT_THAT(Why(plan), HasSubstr(message));
  }
  EXPECT_THAT(Why(json::array()), HasSubstr("plan: not a JSON object"));
}

}  // namespace
}  // namespace orch::planner
