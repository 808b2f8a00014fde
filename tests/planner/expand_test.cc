#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/plan.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Replace;
using testing::ValidSpecText;

std::vector<std::string> Rows(const Plan& plan) {
  std::vector<std::string> rows;
  for (const Job& job : plan.jobs) {
    rows.push_back(plan.CellOf(job).label + " " + plan.WorkloadOf(job).name + " #" +
                   std::to_string(job.repeat));
  }
  return rows;
}

TEST(ExpandTest, BaselineRepeatsThenOneCellPerAlternativeInFileOrder) {
  Plan plan = MustPlan(ValidSpecText());
  EXPECT_THAT(
      Rows(plan),
      ElementsAre("baseline readme #0", "baseline readme #1", "baseline readme #2",
                  "baseline story #0", "baseline story #1", "baseline story #2",
                  "attention=on readme #0", "attention=on story #0", "quant=q8_0 readme #0",
                  "quant=q8_0 story #0", "quant=f16 readme #0", "quant=f16 story #0",
                  "kv=q8_0/f16 readme #0", "kv=q8_0/f16 story #0", "sampler.seed=43 story #0"));
  EXPECT_EQ(plan.cells.size(), 6u);
}

TEST(ExpandTest, CellChangesExactlyOneAxis) {
  Plan plan = MustPlan(ValidSpecText());
  const Coordinate& base = plan.cells[0].coordinate;
  for (const Cell& cell : plan.cells) {
    int differing = 0;
    for (const auto& [axis, value] : cell.coordinate) differing += base.at(axis) == value ? 0 : 1;
    EXPECT_EQ(differing, cell.is_baseline() ? 0 : 1) << cell.label;
  }
}

TEST(ExpandTest, CellRepeatsMultiplyEveryNonBaselineCell) {
  Plan plan = MustPlan(Replace(ValidSpecText(), "cells = 1", "cells = 2"));
  EXPECT_EQ(plan.jobs.size(), 6u + 2u * 9u);
}

TEST(ExpandTest, SamplerAxesLeaveTeacherForcedCoordinatesAlone) {
  Plan plan = MustPlan(ValidSpecText());
  const Job& forced = plan.jobs[0];
  const Job& generated = plan.jobs[3];
  EXPECT_EQ(plan.JobCoordinate(forced).count("sampler.seed"), 0u);
  EXPECT_EQ(plan.JobCoordinate(generated).at("sampler.seed"), AxisValue::Int(42));
}

TEST(ExpandTest, RequirementsComeFromTheCoordinate) {
  std::string text = Replace(ValidSpecText(), "hardware = \"cpu\"", "hardware = \"gpu:h100\"");
  text = Replace(text, "tp = 1", "tp = 2");
  Plan plan = MustPlan(text);
  const Requirements& r = plan.cells[0].requirements;
  EXPECT_EQ(r.engine, "llama.cpp@v0.4.0");
  EXPECT_EQ(r.hardware, "gpu:h100");
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.model, "synth:" + plan.spec.model.synth);

  Plan cpu = MustPlan(ValidSpecText());
  EXPECT_EQ(cpu.cells[0].requirements.gpus, 0);
}

TEST(ExpandTest, QuantCellsRequireTheirPinnedVariantFile) {
  std::string text = Replace(ValidSpecText(),
                             "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,"
                             "ff=128,ctx=256,seed=7\"",
                             "file = \"m.gguf\"\nsha256 = \"" + std::string(64, '1') +
                                 "\"\nvariants.q8_0 = { file = \"m-q8.gguf\", sha256 = \"" +
                                 std::string(64, '2') + "\" }");
  Plan plan = MustPlan(text);
  for (const Cell& cell : plan.cells) {
    std::string want = cell.label == "quant=q8_0" ? std::string(64, '2') : std::string(64, '1');
    EXPECT_EQ(cell.requirements.model, "sha256:" + want) << cell.label;
  }
}

TEST(ExpandTest, InvalidCombinationNamesBothAxesAtTheAlternative) {
  std::string text = Replace(ValidSpecText(), "kv = [\"q8_0/f16\"]", "kv = [\"q4_0\"]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"q4_0\"]") +
                          ": error: alternatives.kv[0]: cell kv=q4_0: kv = \"q4_0\" needs "
                          "attention = \"on\", but attention = \"off\": llama.cpp supports a "
                          "quantized V cache only with flash attention; a K/V pair with an "
                          "unquantized V half (e.g. \"q8_0/f16\") runs without it"));
}

TEST(ExpandTest, QuantizedVCacheWithAutoAttentionIsRefused) {
  std::string text = Replace(ValidSpecText(), "attention = \"off\"", "attention = \"auto\"");
  text = Replace(text, "kv = [\"q8_0/f16\"]", "kv = [\"q4_0\"]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"q4_0\"]") +
                          ": error: alternatives.kv[0]: cell kv=q4_0: kv = \"q4_0\" needs "
                          "attention = \"on\", but attention = \"auto\": llama.cpp supports a "
                          "quantized V cache only with flash attention; a K/V pair with an "
                          "unquantized V half (e.g. \"q8_0/f16\") runs without it"));
}

TEST(ExpandTest, WeightTypeTheDriverLacksIsRefusedAtItsAlternative) {
  std::string text =
      Replace(ValidSpecText(), "quant = [\"q8_0\", \"f16\"]", "quant = [\"q8_0\", \"tq1_0\"]");
  std::vector<std::string> errors = ErrorsOf(text);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::StartsWith(
                             At(text, "\"tq1_0\"") +
                             ": error: alternatives.quant[1]: cell quant=tq1_0: llama.cpp does "
                             "not support quant = \"tq1_0\"; expected one of f32, f16, bf16,"));
}

TEST(ExpandTest, SeedAboveTheDriversUint32IsRefused) {
  std::string text = Replace(ValidSpecText(), "sampler.seed = 42", "sampler.seed = 4294967296");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "4294967296") +
                          ": error: baseline.sampler.seed: llama.cpp accepts sampler.seed in "
                          "[0, 4294967295], got 4294967296"));
  EXPECT_THAT(ErrorsOf(Replace(ValidSpecText(), "sampler.seed = 42", "sampler.seed = 4294967295")),
              ::testing::IsEmpty());
}

TEST(ExpandTest, BaselineProblemIsReportedOnceNotPerCell) {
  std::string text = Replace(ValidSpecText(), "quant = \"q4_0\"", "quant = \"nvfp4\"");
  std::vector<std::string> errors = ErrorsOf(text);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("baseline.quant: llama.cpp does not support quant = \"nvfp4\""));
}

TEST(ExpandTest, UnknownEngineIsAllowedWithOneWarning) {
  std::string text =
      Replace(ValidSpecText(), "engine = \"llama.cpp@v0.4.0\"", "engine = \"tgi@3.0\"");
  PlanOutcome outcome = PlanText(text);
  ASSERT_TRUE(outcome.plan.has_value());
  EXPECT_THAT(Messages(outcome),
              ElementsAre(At(text, "\"tgi") +
                          ": warning: baseline.engine: orch has no capability table for engine "
                          "\"tgi@3.0\"; its values are not checked here (no capability "
                          "declaration of its driver is built into orch)"));
  EXPECT_EQ(outcome.plan->warnings.size(), 1u);
}

TEST(ExpandTest, WarnsWhenSamplerAxisHasNoGenerateWorkload) {
  std::string text = ValidSpecText();
  std::size_t story = text.find("[[workloads]]\nname = \"story\"");
  std::size_t end = text.find("[baseline]");
  text.erase(story, end - story);
  PlanOutcome outcome = PlanText(text);
  ASSERT_TRUE(outcome.plan.has_value());
  ASSERT_EQ(outcome.plan->warnings.size(), 1u);
  EXPECT_THAT(outcome.plan->warnings[0].message,
              HasSubstr("sampler.seed acts only on generate workloads and there are none"));
  EXPECT_EQ(outcome.plan->jobs.size(), 3u + 4u);
}

TEST(ExpandTest, IsDeterministic) {
  Plan a = MustPlan(ValidSpecText());
  Plan b = MustPlan(ValidSpecText());
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (std::size_t i = 0; i < a.jobs.size(); ++i) EXPECT_EQ(a.jobs[i].id, b.jobs[i].id);
}

}  // namespace
}  // namespace orch::planner
