#include "planner/job_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using ::testing::ElementsAre;
using testing::Replace;
using testing::ValidSpecText;

std::map<std::string, std::string> IdsByRow(const Plan& plan) {
  std::map<std::string, std::string> out;
  for (const Job& job : plan.jobs) {
    out[plan.CellOf(job).label + " " + plan.WorkloadOf(job).name + " #" +
        std::to_string(job.repeat)] = job.id;
  }
  return out;
}

// Golden ids: these must never change, or resubmitted plans stop matching stored runs.
TEST(JobIdTest, GoldenIdsForAFixedSpec) {
  Plan plan = MustPlan(ValidSpecText());
  std::vector<std::string> ids;
  for (const Job& job : plan.jobs) ids.push_back(job.id);
  EXPECT_THAT(ids,
              ElementsAre("a52faed2fceee5371cb66804c9d7fc95", "fa2ec3cd807fbc0e7fbed69d214569bf",
                          "3c0d5af1ca23c1961a26125ff32f32dd", "fbcd09dda948e7590b3aa3d51a09988e",
                          "b39984c51ad4becd9833704d83e04291", "5701dee8b4cdb2a22b3d1d3f66da3d25",
                          "46f7b1dd5d0e7d370540daeab9b3fb4e", "ce3cb71cd25ee8d674fa2a90962cee03",
                          "c8022d6901f021d57ab772f57633219a", "a5736dd208a61bf54e45ff47de7b077e",
                          "8df8f7d151f3948f117f90109d90e61d", "75b1e76f8b030cc4d9cf5706908eed1e",
                          "2cc5b7c87cf049b1fd7181929be7624a", "ec863831866ad4e3cea3b87d170ef0a6",
                          "c395c478286314641bcab1205a11ee15"));
}

TEST(JobIdTest, CanonicalFormIsSortedCompactJson) {
  Plan plan = MustPlan(ValidSpecText());
  const Job& job = plan.jobs[3];  // baseline story #0
  std::string axes = CanonicalAxes(plan.CellOf(job).coordinate, WorkloadKind::kGenerate);
  EXPECT_EQ(axes,
            "{\"attention\":\"off\",\"engine\":\"llama.cpp@v0.4.0\",\"hardware\":\"cpu\","
            "\"kv\":\"f16\",\"quant\":\"q4_0\",\"sampler.seed\":42,\"threads\":1,\"tp\":1}");
  std::string canonical = CanonicalJob(axes, "unit", plan.CellOf(job).requirements.model, 0,
                                       WorkloadDigest(plan.WorkloadOf(job)));
  EXPECT_EQ(JobIdOf(canonical), job.id);
  EXPECT_EQ(CanonicalWorkload(plan.WorkloadOf(job)),
            "{\"capture\":{\"full_every\":0,\"full_windows\":[],\"top_k\":20},\"kind\":"
            "\"generate\",\"max_tokens\":8,\"name\":\"story\",\"prompt\":\"Once upon a time\"}");
}

TEST(JobIdTest, OnlyAFullRowBudgetOtherThanTheDefaultIsPartOfTheId) {
  Plan plan = MustPlan(ValidSpecText());
  Workload workload = plan.WorkloadOf(plan.jobs[3]);
  const std::string by_default = CanonicalWorkload(workload);
  EXPECT_EQ(by_default.find("full_row_budget_bytes"), std::string::npos);
  workload.capture.full_row_budget_bytes = 0;
  EXPECT_EQ(CanonicalWorkload(workload),
            "{\"capture\":{\"full_every\":0,\"full_row_budget_bytes\":0,\"full_windows\":[],"
            "\"top_k\":20},\"kind\":\"generate\",\"max_tokens\":8,\"name\":\"story\","
            "\"prompt\":\"Once upon a time\"}");
}

TEST(JobIdTest, IdsAreUniqueWithinAPlan) {
  Plan plan = MustPlan(ValidSpecText());
  std::set<std::string> ids;
  for (const Job& job : plan.jobs) {
    EXPECT_EQ(job.id.size(), kJobIdHexDigits);
    EXPECT_TRUE(ids.insert(job.id).second) << job.id;
  }
}

TEST(JobIdTest, EditingOneWorkloadChangesOnlyItsJobs) {
  auto before = IdsByRow(MustPlan(ValidSpecText()));
  auto after = IdsByRow(MustPlan(Replace(ValidSpecText(), "max_tokens = 8", "max_tokens = 9")));
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [row, id] : before) {
    bool story = row.find(" story ") != std::string::npos;
    EXPECT_EQ(id != after[row], story) << row;
  }
}

TEST(JobIdTest, SamplerBaselineDoesNotTouchTeacherForcedJobs) {
  auto before = IdsByRow(MustPlan(ValidSpecText()));
  auto after =
      IdsByRow(MustPlan(Replace(ValidSpecText(), "sampler.seed = 42", "sampler.seed = 7")));
  for (const auto& [row, id] : before) {
    // The sampler.seed=43 cell runs seed 43 either way: same coordinate, same id.
    bool changed = row.find(" story ") != std::string::npos && !row.starts_with("sampler.seed");
    EXPECT_EQ(id != after[row], changed) << row;
  }
}

TEST(JobIdTest, SpellingAndOrderOfTheSpecDoNotMatter) {
  std::string text = Replace(ValidSpecText(), "kv = \"f16\"", "kv = \"F16/f16\"");
  text = Replace(text, "engine = \"llama.cpp@v0.4.0\"\n", "");
  text = Replace(text, "threads = 1", "threads = 1\nengine = \"LLAMA.CPP@v0.4.0\"");
  EXPECT_EQ(IdsByRow(MustPlan(text)), IdsByRow(MustPlan(ValidSpecText())));
}

}  // namespace
}  // namespace orch::planner
