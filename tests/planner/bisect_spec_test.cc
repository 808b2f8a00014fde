// [bisect] (docs/bisect.md): from is the baseline, to's differing values are the changes,
// and the plan's cells are the first round of bisect/bisect.h; the plan document carries
// the bisection and each combination's changes; every mistake names its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"
#include "planner/plan_ids.h"
#include "planner/plan_to_json.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kHead = R"toml(
[experiment]
name = "unit"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "text"
kind = "teacher_forced"
text = "In the beginning God created the heaven and the earth."
positions = 8
)toml";

std::string BisectSpec(const std::string& bisect) { return kHead + bisect; }

constexpr const char* kBisect = R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu", threads = 1 }
to = { quant = "q8_0", engine = "llama.cpp@b8390", kv = "f16", attention = "on" }
tolerance = 0.1
)toml";

std::vector<std::string> Labels(const Plan& plan) {
  std::vector<std::string> out;
  for (const Cell& c : plan.cells) out.push_back(c.label);
  return out;
}

TEST(BisectSpecTest, TheCellsAreTheFirstRoundInTheOrderToNamesItsChanges) {
  Plan plan = MustPlan(BisectSpec(kBisect));
  ASSERT_TRUE(plan.spec.bisect.has_value());
  // kv equals from's value: not a difference. The walk follows to's order: quant first.
  EXPECT_THAT(plan.spec.BisectAxisNames(), ElementsAre("quant", "engine", "attention"));
  EXPECT_DOUBLE_EQ(plan.spec.bisect->tolerance, 0.1);
  EXPECT_EQ(plan.spec.bisect->max_rounds, 4);
  EXPECT_THAT(Labels(plan),
              ElementsAre("from", "to", "from + quant", "from + engine", "from + attention",
                          "to - quant", "to - engine", "to - attention"));
  // A one-axis cell is an ordinary one-axis cell; a combination switches its axes.
  const Cell& quant = plan.cells[2];
  EXPECT_FALSE(quant.is_combination());
  EXPECT_EQ(plan.spec.axes[quant.axis].name, "quant");
  const Cell& to = plan.cells[1];
  EXPECT_TRUE(to.is_combination());
  EXPECT_EQ(to.coordinate.at("quant").ToText(), "q8_0");
  EXPECT_EQ(to.coordinate.at("engine").ToText(), "llama.cpp@b8390");
  EXPECT_EQ(to.coordinate.at("kv").ToText(), "f16");
  EXPECT_EQ(to.requirements.engine, "llama.cpp@b8390");
  const Cell& no_engine = plan.cells[6];
  EXPECT_EQ(no_engine.coordinate.at("engine").ToText(), "llama.cpp@v0.4.0");
  EXPECT_EQ(no_engine.coordinate.at("attention").ToText(), "on");
  // from and to run [repeats] baseline times (their noise); the rest cells times.
  std::map<std::string, int> repeats;
  for (const Job& job : plan.jobs) ++repeats[plan.CellOf(job).label];
  EXPECT_EQ(repeats["from"], 2);
  EXPECT_EQ(repeats["to"], 2);
  EXPECT_EQ(repeats["to - engine"], 1);
  EXPECT_EQ(plan.jobs.size(), 2u + 2u + 6u);
}

TEST(BisectSpecTest, AOneAxisCellHasTheIdOfTheSameCellOfAOneAxisAtATimeSpec) {
  Plan bisect = MustPlan(BisectSpec(kBisect));
  Plan ofat = MustPlan(std::string(kHead) + R"toml(
[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1

[alternatives]
quant = ["q8_0"]
)toml");
  EXPECT_EQ(bisect.jobs[0].id, ofat.jobs[0].id) << "from is the baseline";
  auto id_of = [](const Plan& plan, const std::string& label) {
    for (const Job& job : plan.jobs)
      if (plan.CellOf(job).label == label) return job.id;
    return std::string();
  };
  EXPECT_EQ(id_of(bisect, "from + quant"), id_of(ofat, "quant=q8_0"));
}

TEST(BisectSpecTest, ThePlanDocumentCarriesTheBisectionAndEachCombinationsChanges) {
  Plan plan = MustPlan(BisectSpec(kBisect));
  std::string text = PlanToJson(plan);
  json doc = json::parse(text);
  EXPECT_EQ(doc["bisect"]["axes"], json({"quant", "engine", "attention"}));
  EXPECT_EQ(doc["bisect"]["tolerance"], 0.1);
  EXPECT_EQ(doc["bisect"]["max_rounds"], 4);
  EXPECT_EQ(doc["cells"][1]["label"], "to");
  EXPECT_EQ(doc["cells"][1]["changes"],
            json({{"attention", "on"}, {"engine", "llama.cpp@b8390"}, {"quant", "q8_0"}}));
  EXPECT_EQ(doc["cells"][0]["round"], 1) << "from is measured in round 1 too";
  EXPECT_EQ(doc["cells"][1]["round"], 1);
  EXPECT_EQ(doc["cells"][2]["axis"], "quant");
  EXPECT_FALSE(doc["cells"][2].contains("changes"));
  Result<plan_document::Document> read = plan_document::ReadPlanJson(text);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_TRUE(read->bisect.has_value());
  EXPECT_EQ(read->bisect->axes, (std::vector<std::string>{"quant", "engine", "attention"}));
  EXPECT_EQ(read->cells[1].changes.size(), 3u);
  EXPECT_EQ(read->cells[7].round, 1);
  EXPECT_EQ(plan_document::WritePlanJson(*read), text) << "read and written back unchanged";
  // The coordinator's recomputation of the ids accepts it.
  EXPECT_TRUE(CheckPlanJobIds(*read).ok());
}

TEST(BisectSpecTest, LaterRoundsAddCellsAndRepeats) {
  std::string text = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu", threads = 1 }
to = { quant = "q8_0", engine = "llama.cpp@b8390", attention = "on", threads = 2 }
)toml");
  Plan first = MustPlan(text);
  EXPECT_EQ(first.cells.size(), 11u) << "from, to, 4 alone, 4 left out, 1 step of the walk";
  Spec spec = first.spec;
  spec.bisect->cells.push_back({0b0101, 2, false});  // a pair: quant and attention
  spec.bisect->cells[1].repeated = true;             // from + quant: its own noise
  PlanOutcome second = ExpandSpec(spec);
  ASSERT_TRUE(second.plan.has_value());
  const Plan& plan = *second.plan;
  EXPECT_EQ(plan.cells.back().label, "from + quant + attention");
  EXPECT_EQ(plan.cells.back().round, 2);
  EXPECT_EQ(plan.cells.back().coordinate.at("attention").ToText(), "on");
  EXPECT_EQ(plan.cells.back().coordinate.at("engine").ToText(), "llama.cpp@v0.4.0");
  int quant_jobs = 0;
  for (const Job& job : plan.jobs) quant_jobs += plan.CellOf(job).label == "from + quant";
  EXPECT_EQ(quant_jobs, 2);
  // The first round's jobs keep their ids: a coordinator that ran them keeps their runs.
  for (std::size_t i = 0; i < first.jobs.size(); ++i) {
    bool kept = false;
    for (const Job& job : plan.jobs) kept = kept || job.id == first.jobs[i].id;
    EXPECT_TRUE(kept) << first.jobs[i].id;
  }
}

TEST(BisectSpecTest, EveryMistakeNamesItsField) {
  std::string both = BisectSpec(kBisect) + "\n[baseline]\nengine = \"llama.cpp@v0.4.0\"\n";
  EXPECT_THAT(
      ErrorsOf(both),
      ::testing::Contains(HasSubstr("error: baseline: a spec with [bisect] has no [baseline]")));
  std::string missing = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu" }
to = { threads = 2 }
)toml");
  EXPECT_THAT(ErrorsOf(missing),
              ElementsAre(At(missing, "2 }") +
                          ": error: bisect.to.threads: axis \"threads\" has no value in "
                          "bisect.from; give it there too, so that the walk from one to the other "
                          "has a start"));
  std::string same = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu" }
to = { quant = "f32" }
)toml");
  EXPECT_THAT(ErrorsOf(same), ElementsAre(HasSubstr("bisect.to: bisect.to gives every axis the "
                                                    "value bisect.from gives it")));
  std::string standard = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1 }
to = { quant = "q8_0" }
tolerance = 1.5
max_rounds = 0
typo = 1
)toml");
  std::vector<std::string> errors = ErrorsOf(standard);
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  EXPECT_THAT(all, HasSubstr("bisect.from.hardware: missing standard axis"));
  EXPECT_THAT(all, HasSubstr("bisect.tolerance: expected a share of KLD(to, from) in [0, 1)"));
  EXPECT_THAT(all, HasSubstr("bisect.max_rounds"));
  EXPECT_THAT(all, HasSubstr("typo"));
  std::string sampler = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu", sampler.seed = 1 }
to = { sampler.seed = 2, quant = "q8_0" }
)toml");
  EXPECT_THAT(ErrorsOf(sampler),
              ElementsAre(HasSubstr("bisect.to.sampler.seed: sampler.seed acts only on generate "
                                    "workloads, and workload \"text\" is teacher-forced")));
  // A combination the engine refuses is reported at to's value of the refused axis.
  std::string refused = BisectSpec(R"toml(
[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu" }
to = { kv = "q8_0", quant = "q8_0" }
)toml");
  EXPECT_THAT(ErrorsOf(refused), ::testing::Contains(HasSubstr("bisect.to.kv: cell")));
}

}  // namespace
}  // namespace orch::planner
