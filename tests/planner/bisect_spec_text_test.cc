// The spec `orch bisect A B` writes from two stored jobs (planner/bisect_spec_text.h):
// read back by the real parser, its workload has the stored workload's digest and its
// `from` and `to` cells the two stored coordinates; what a spec cannot state is refused.
#include "planner/bisect_spec_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan_document/plan_json.h"
#include "planner/plan_to_json.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using ::testing::HasSubstr;

// A one-axis-at-a-time experiment whose jobs stand for what two setups ran.
constexpr const char* kStored = R"toml(
[experiment]
name = "stored"

[model]
name = "tiny"
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "text"
kind = "teacher_forced"
text = "\nline one \"quoted\"\ttab \u0001 \u007F ünïcode \\ back\n"
positions = 6
capture = { top_logits = 8, full_every = 2, full_windows = [[0, 2], [4, 6]], full_row_budget_bytes = 0 }

[[workloads]]
name = "ids"
kind = "teacher_forced"
tokens = [1, 2, 3, 4, 5, 6, 7]
positions = 5

[[workloads]]
name = "gen"
kind = "generate"
prompt = "Once"
max_tokens = 4

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
sampler.temperature = 0.7
knob."n-gpu" = 2

[alternatives]
attention = ["on"]
threads = [2]
sampler.temperature = [0.25]
)toml";

struct Stored {
  plan_document::Document doc;
  // The coordinate of the first job of `cell` on `workload`.
  plan_document::Coordinate Coordinate(const std::string& cell, const std::string& workload) const {
    for (const plan_document::Job& job : doc.jobs) {
      if (job.cell == cell && doc.workloads[job.workload].name == workload) {
        return doc.coordinates[job.coordinate].ToCoordinate();
      }
    }
    ADD_FAILURE() << "no job of " << cell << " on " << workload;
    return {};
  }
  const plan_document::Workload& Workload(const std::string& name) const {
    return doc.workloads[doc.FindWorkload(name)];
  }
};

Stored PlanStored() {
  Plan plan = MustPlan(kStored);
  Result<plan_document::Document> doc = plan_document::ReadPlanJson(PlanToJson(plan));
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return {doc.ok() ? std::move(*doc) : plan_document::Document{}};
}

// The written spec planned and read back as a document.
plan_document::Document Replan(const BisectSpecSource& source) {
  Result<std::string> text = BisectSpecText(source);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text.ok()) return {};
  Plan plan = MustPlan(*text);
  Result<plan_document::Document> doc = plan_document::ReadPlanJson(PlanToJson(plan));
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return doc.ok() ? std::move(*doc) : plan_document::Document{};
}

plan_document::Coordinate CellCoordinate(const plan_document::Document& doc,
                                         const std::string& cell) {
  for (const plan_document::Job& job : doc.jobs) {
    if (job.cell == cell) return doc.coordinates[job.coordinate].ToCoordinate();
  }
  ADD_FAILURE() << "no cell " << cell;
  return {};
}

TEST(BisectSpecTextTest, ReadsBackToTheStoredWorkloadAndBothCoordinates) {
  Stored stored = PlanStored();
  for (const std::string workload : {"text", "ids", "gen"}) {
    SCOPED_TRACE(workload);
    const std::string cell = workload == "gen" ? "sampler.temperature=0.25" : "attention=on";
    BisectSpecSource source{"bisect-x",
                            "from A to B",
                            *stored.doc.model,
                            stored.Workload(workload),
                            stored.Coordinate("baseline", workload),
                            stored.Coordinate(cell, workload)};
    plan_document::Document doc = Replan(source);
    ASSERT_EQ(doc.workloads.size(), 1u);
    EXPECT_EQ(doc.workloads[0].digest, stored.Workload(workload).digest);
    EXPECT_EQ(doc.workloads[0].capture, stored.Workload(workload).capture);
    EXPECT_EQ(doc.model, stored.doc.model);
    EXPECT_EQ(doc.experiment, "bisect-x");
    EXPECT_EQ(doc.description, "from A to B");
    EXPECT_EQ(CellCoordinate(doc, "from"), source.from);
    EXPECT_EQ(CellCoordinate(doc, "to"), source.to);
    ASSERT_TRUE(doc.bisect.has_value());
    EXPECT_EQ(doc.bisect->axes.size(), 1u);
  }
}

TEST(BisectSpecTextTest, TheWalkTakesTheStandardAxesFirstThenTheOthersByName) {
  Stored stored = PlanStored();
  plan_document::Coordinate to = stored.Coordinate("baseline", "gen");
  for (auto& [axis, value] : to) {
    if (axis == "threads") value = std::int64_t{4};
    if (axis == "attention") value = std::string("on");
    if (axis == "sampler.temperature") value = 1.5;
    if (axis == "knob.n-gpu") value = std::int64_t{0};
  }
  BisectSpecSource source{"bisect-y",
                          "",
                          *stored.doc.model,
                          stored.Workload("gen"),
                          stored.Coordinate("baseline", "gen"),
                          to,
                          0.2,
                          7};
  plan_document::Document doc = Replan(source);
  ASSERT_TRUE(doc.bisect.has_value());
  EXPECT_THAT(doc.bisect->axes,
              ::testing::ElementsAre("attention", "knob.n-gpu", "sampler.temperature", "threads"));
  EXPECT_DOUBLE_EQ(doc.bisect->tolerance, 0.2);
  EXPECT_EQ(doc.bisect->max_rounds, 7);
  EXPECT_EQ(CellCoordinate(doc, "to"), to);
}

TEST(BisectSpecTextTest, ACaseOfATaskIsRefusedNamingIt) {
  Stored stored = PlanStored();
  plan_document::Workload workload = stored.Workload("gen");
  workload.name = "triage.c1";
  workload.task = plan_document::TaskRef{"triage", "c1", std::nullopt};
  BisectSpecSource source{"bisect-z",
                          "",
                          *stored.doc.model,
                          workload,
                          stored.Coordinate("baseline", "gen"),
                          stored.Coordinate("attention=on", "gen")};
  Result<std::string> text = BisectSpecText(source);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(),
              HasSubstr("workload triage.c1 is a case of a task workload"));
}

TEST(BisectSpecTextTest, AFileModelKeepsItsPathHashAndVariants) {
  Stored stored = PlanStored();
  plan_document::Model model;
  model.file = "models/my model.gguf";
  model.sha256 = std::string(64, 'a');
  model.variants["q8_0"] = {"models/q8.gguf", std::string(64, 'b')};
  BisectSpecSource source{"bisect-w",
                          "",
                          model,
                          stored.Workload("ids"),
                          stored.Coordinate("baseline", "ids"),
                          stored.Coordinate("attention=on", "ids")};
  plan_document::Document doc = Replan(source);
  ASSERT_TRUE(doc.model.has_value());
  EXPECT_EQ(doc.model->file, "models/my model.gguf");
  EXPECT_EQ(doc.model->sha256, std::string(64, 'a'));
  ASSERT_EQ(doc.model->variants.count("q8_0"), 1u);
  EXPECT_EQ(doc.model->variants.at("q8_0").sha256, std::string(64, 'b'));
}

}  // namespace
}  // namespace orch::planner
