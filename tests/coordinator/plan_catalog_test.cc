#include "coordinator/plan_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;
using testing::PlanJson;
using testing::SmallSpec;

TEST(PlanCatalogTest, ReadsThePlannersJson) {
  Result<ParsedPlan> plan = ParsePlanJson(PlanJson(SmallSpec("exp", 3)));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->experiment, "exp");
  EXPECT_EQ(plan->jobs.size(), 3u);
  ASSERT_EQ(plan->requirements.size(), 1u);  // interned: all three share one
  EXPECT_EQ(plan->requirements[0].engine, "llama.cpp@v0.4.0");
  EXPECT_EQ(plan->requirements[0].hardware, "cpu");
}

TEST(PlanCatalogTest, AssignCarriesCoordinateAndJobSpec) {
  PlanCatalog catalog;
  std::uint32_t index = catalog.Add(ParsePlanJson(PlanJson(SmallSpec())).value());
  const ParsedPlan& plan = catalog.plan(index);
  protocol::Assign assign = catalog.MakeAssign(index, plan.jobs[0]);
  EXPECT_EQ(assign.job_id, plan.jobs[0].id);
  EXPECT_EQ(assign.workload, "readme");
  EXPECT_FALSE(assign.coordinate.empty());
  nlohmann::json spec = nlohmann::json::parse(assign.job_spec);
  EXPECT_EQ(spec["experiment"], "exp");
  EXPECT_EQ(spec["job"]["id"], plan.jobs[0].id);
  EXPECT_EQ(spec["workload"]["name"], "readme");
  EXPECT_TRUE(spec["model"].contains("synth"));
}

TEST(PlanCatalogTest, RefusesDocumentsThatAreNotPlansNamingTheField) {
  EXPECT_THAT(ParsePlanJson("[1,2]").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParsePlanJson("{\"schema\":\"orch.plan/9\"}").status().message(),
              HasSubstr("plan.schema"));
  std::string no_jobs = R"({"schema":"orch.plan/1","experiment":{"name":"e"},"workloads":[]})";
  EXPECT_THAT(ParsePlanJson(no_jobs).status().message(), HasSubstr("plan.jobs"));
  std::string bad_job = R"({"schema":"orch.plan/1","experiment":{"name":"e"},
      "workloads":[{"name":"w"}],"jobs":[{"id":"0123456789abcdef0123456789abcdef","workload":"x","requirements":{}}]})";
  EXPECT_THAT(ParsePlanJson(bad_job).status().message(), HasSubstr("jobs[0].workload"));
}

// Fields of the wrong type are errors naming the field, never exceptions: a Submit
// is a message from a peer.
TEST(PlanCatalogTest, WronglyTypedFieldsAreErrorsNotCrashes) {
  auto with_requirements = [](const std::string& requirements) {
    return R"({"schema":"orch.plan/1","experiment":{"name":"e"},
      "workloads":[{"name":"w"}],"jobs":[{"id":"0123456789abcdef0123456789abcdef","workload":"w","requirements":)" +
           requirements + "}]}";
  };
  EXPECT_THAT(ParsePlanJson(R"({"schema":5})").status().message(), HasSubstr("plan.schema"));
  EXPECT_THAT(
      ParsePlanJson(with_requirements(R"({"gpus":"x"})")).status().message(),
      HasSubstr("plan.jobs[0].requirements.gpus: must be an integer in [0, 4096], got \"x\""));
  EXPECT_THAT(ParsePlanJson(with_requirements(R"({"gpus":1e30})")).status().message(),
              HasSubstr("requirements.gpus"));
  EXPECT_THAT(ParsePlanJson(with_requirements(R"({"engine":5})")).status().message(),
              HasSubstr("plan.jobs[0].requirements.engine: must be a string, got 5"));
  nlohmann::json typed = nlohmann::json::parse(PlanJson(SmallSpec()));
  typed["jobs"][0]["requirements"]["engine"] = "x";  // not part of the job id
  typed["jobs"][0]["requirements"]["gpus"] = 2;
  EXPECT_TRUE(ParsePlanJson(typed.dump()).ok());
}

}  // namespace
}  // namespace orch::coordinator

namespace orch::coordinator {
namespace {

// The coordinator checks a plan as the planner would have made it: a peer may
// send anything.
TEST(PlanCatalogTest, RefusesPlansTheServerCannotTrust) {
  const std::string id = "0123456789abcdef0123456789abcdef";
  auto plan = [](const std::string& name, const std::string& workloads, const std::string& jobs) {
    return R"({"schema":"orch.plan/1","experiment":{"name":)" + name + R"(},"workloads":)" +
           workloads + R"(,"jobs":)" + jobs + "}";
  };
  auto job = [](const std::string& job_id, const std::string& more = "") {
    return R"({"id":")" + job_id + R"(","workload":"w","requirements":{})" + more + "}";
  };
  std::string w = R"([{"name":"w"}])";
  auto why = [](const std::string& text) { return ParsePlanJson(text).status().message(); };
  EXPECT_THAT(why(plan(R"("../../etc")", w, "[" + job(id) + "]")),
              HasSubstr("plan.experiment.name: invalid name \"../../etc\""));
  EXPECT_THAT(why(plan(R"("..")", w, "[" + job(id) + "]")), HasSubstr("invalid name"));
  EXPECT_THAT(why(plan(R"("e")", w, "[]")), HasSubstr("plan.jobs: a plan needs at least one job"));
  EXPECT_THAT(why(plan(R"("e")", w, "[" + job(id) + "," + job(id) + "]")),
              HasSubstr("plan.jobs[1].id: duplicate job id " + id));
  EXPECT_THAT(why(plan(R"("e")", w, "[" + job("j/../x") + "]")),
              HasSubstr("plan.jobs[0].id: must be 32 lowercase hex digits"));
  EXPECT_THAT(why(plan(R"("e")", R"([{"name":"w"},{"name":"w"}])", "[" + job(id) + "]")),
              HasSubstr("plan.workloads[].name: duplicate workload w"));
  EXPECT_THAT(why(plan(R"("e")", w, "[" + job(id, R"(,"repeat":-1)") + "]")),
              HasSubstr("plan.jobs[0].repeat: must be an integer in [0, 1000000], got -1"));
  EXPECT_THAT(why(plan(R"("e")", w, "[" + job(id, R"(,"cell":7)") + "]")),
              HasSubstr("plan.jobs[0].cell: must be a string, got 7"));
  EXPECT_THAT(why(plan(R"("e")", w, "[" + job(id) + "]")),
              HasSubstr("plan.workloads[0].kind: required string"))
      << "ids are recomputed";
  EXPECT_TRUE(ParsePlanJson(PlanJson(SmallSpec("e", 2))).ok());
}

// A job id that is not the hash of its job's canonical form was not made by orch plan:
// a peer's plan is refused naming the job; the store's copy, checked when it came, is
// read as it is (an older orch did not check).
TEST(PlanCatalogTest, JobIdsOfASubmittedPlanAreRecomputed) {
  nlohmann::json edited = nlohmann::json::parse(PlanJson(SmallSpec("e", 2)));
  edited["jobs"][1]["coordinate"]["quant"] = "q8_0";  // same id, other coordinate
  Result<ParsedPlan> from_peer = ParsePlanJson(edited.dump());
  EXPECT_THAT(from_peer.status().message(),
              HasSubstr("plan.jobs[1].id: " + edited["jobs"][1]["id"].get<std::string>() +
                        " is not the id of this job's coordinate"));
  EXPECT_TRUE(ParsePlanJson(edited.dump(), PlanSource::kStore).ok());
}

TEST(PlanCatalogTest, ExperimentNameOfFindsTheTopLevelNameOnly) {
  EXPECT_EQ(ExperimentNameOf(R"({"experiment": {"notes": {"name": "inner"}, "name": "exp-1"},
                                "jobs": [{"name": "job"}]})"),
            "exp-1");
  EXPECT_EQ(ExperimentNameOf(R"({"jobs": [{"experiment": {"name": "deep"}}],
                                "experiment": {"name": 5}})"),
            "");
  EXPECT_EQ(ExperimentNameOf(R"({"name": "top", "experiment": []})"), "");
  EXPECT_EQ(ExperimentNameOf("not json"), "");
  EXPECT_EQ(ExperimentNameOf(R"({"experiment": {"name": "cut)"), "");
}

}  // namespace
}  // namespace orch::coordinator
