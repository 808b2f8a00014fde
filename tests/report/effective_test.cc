// Requested against effective settings (report/effective.h): the pure comparison, and
// a report whose runs' drivers said what the engine ran: a kv=f32 cell that ran the
// baseline's f16 under flash attention is named so, not reported as a finding, and its
// axis is not credited.
#include "report/effective.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/render.h"
#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using nlohmann::json;

std::string Summary(const json& axes, const json& why = json::object()) {
  return json{{"hello", {{"engine", "llama.cpp"}, {"version", "b8390"}}},
              {"done", {{"positions", 40}, {"effective", {{"axes", axes}, {"why", why}}}}}}
      .dump();
}

TEST(EffectiveTest, ReadsTheDoneFramesEffectiveAxesAndReasons) {
  EffectiveSettings e =
      ParseEffective(Summary({{"kv", "f16"}, {"threads", "2"}}, {{"kv", "under flash attention"}}));
  EXPECT_EQ(e.axes, (std::map<std::string, std::string>{{"kv", "f16"}, {"threads", "2"}}));
  EXPECT_EQ(e.why.at("kv"), "under flash attention");
  EXPECT_FALSE(ParseEffective(R"({"hello": {}, "done": {}})").known());
  EXPECT_FALSE(ParseEffective("not json").known());
}

TEST(EffectiveTest, ResolvedRequestsAndEquivalentSpellingsAreNotDifferences) {
  const Coordinate requested = {{"attention", "auto"}, {"cpu_backend", "best"}, {"kv", "f16/f16"},
                                {"repack", "true"},    {"threads", "0"},        {"quant", "q8_0"}};
  const EffectiveSettings ran{{{"attention", "on"},
                               {"cpu_backend", "zen4"},
                               {"kv", "f16"},
                               {"repack", "on"},
                               {"threads", "16"}},
                              {}};
  EXPECT_TRUE(EffectiveDifferences(requested, ran).empty());
  const std::vector<EffectiveDifference> d =
      EffectiveDifferences({{"kv", "f32"}, {"repack", "on"}},
                           {{{"kv", "f16"}, {"repack", "off"}}, {{"kv", "under flash attention"}}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].axis, "kv");
  EXPECT_EQ(d[0].requested, "f32");
  EXPECT_EQ(d[0].effective, "f16");
  EXPECT_EQ(d[0].why, "under flash attention");
  EXPECT_EQ(d[1].axis, "repack");
  EXPECT_EQ(RanAsText("kv", {}, d), "kv f32 ran as f16 under flash attention");
}

TEST(EffectiveTest, TheSameConfigurationNeedsTheChangedAxisObserved) {
  const EffectiveSettings base{{{"kv", "f16"}, {"attention", "on"}}, {}};
  EXPECT_TRUE(SameEffective(base, {{{"kv", "f16"}, {"attention", "on"}}, {}}, "kv"));
  EXPECT_FALSE(SameEffective(base, {{{"kv", "f32"}, {"attention", "on"}}, {}}, "kv"));
  // quant is not among what the engine reported: equal axes say nothing about it.
  EXPECT_FALSE(SameEffective(base, base, "quant"));
  EXPECT_FALSE(SameEffective({}, base, "kv"));
}

// baseline kv=f16 attention=on repack=off; kv=f32 ran f16 (identical streams);
// repack=on ran without repacked weights yet its stream differs; attention=off ran off.
class EffectiveReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ExperimentBuilder plan("effective");
    plan.Workload("wiki", "teacher_forced", testing::kStandardPositions)
        .Baseline("attention", "on")
        .Baseline("kv", "f16")
        .Baseline("repack", "off")
        .Cell("baseline")
        .Cell("kv=f32")
        .Cell("repack=on")
        .Cell("attention=off");
    const std::string base = plan.Job("baseline", "wiki", 0);
    const std::string kv = plan.Job("kv=f32", "wiki", 0);
    const std::string repack = plan.Job("repack=on", "wiki", 0);
    const std::string attention = plan.Job("attention=off", "wiki", 0);
    plan.Submit(*store_);
    const json ran = {{"attention", "on"}, {"kv", "f16"}, {"repack", "off"}};
    json off = ran;
    off["attention"] = "off";
    using testing::AddSucceededRunWithSummary;
    AddSucceededRunWithSummary(*store_, base, "run-base", Rows(testing::BaselineRow), Summary(ran));
    AddSucceededRunWithSummary(*store_, kv, "run-kv", Rows(testing::BaselineRow),
                               Summary(ran, {{"kv", "under flash attention"}}));
    AddSucceededRunWithSummary(*store_, repack, "run-repack", Rows(testing::AttentionRow),
                               Summary(ran));
    AddSucceededRunWithSummary(*store_, attention, "run-attention", Rows(testing::AttentionRow),
                               Summary(off));
    Result<ExperimentInput> input = LoadExperiment(*store_, "effective");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<Report> report = BuildReport(*input, *source, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  static std::vector<digest::PositionRecord> Rows(std::vector<float> (*row)(std::uint64_t)) {
    std::vector<digest::PositionRecord> out;
    for (std::uint64_t i = 0; i < testing::kStandardPositions; ++i) {
      out.push_back(testing::MakeRecord(i, row(i), testing::TargetAt(i), true));
    }
    return out;
  }

  const CellReport& Cell(const std::string& label) const {
    for (const CellReport& c : report_.workloads.at(0).cells) {
      if (c.cell.label == label) return c;
    }
    ADD_FAILURE() << "no cell " << label;
    return report_.workloads.at(0).baseline;
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  Report report_;
};

TEST_F(EffectiveReportTest, ACellThatRanTheBaselinesConfigurationIsNamedSo) {
  const CellReport& kv = Cell("kv=f32");
  ASSERT_EQ(kv.status, CellStatus::kCompared);
  EXPECT_TRUE(kv.result.bit_identical());
  EXPECT_TRUE(kv.same_effective_as_baseline);
  EXPECT_EQ(kv.effective_note,
            "ran the same effective configuration as baseline: kv f32 ran as f16 under flash "
            "attention");
  ASSERT_EQ(kv.effective_differences.size(), 1u);
  EXPECT_EQ(kv.effective_differences[0].effective, "f16");
  EXPECT_TRUE(report_.workloads[0].baseline.effective_differences.empty());
  EXPECT_FALSE(Cell("attention=off").same_effective_as_baseline);
  EXPECT_TRUE(Cell("attention=off").effective_differences.empty());
}

TEST_F(EffectiveReportTest, ASameConfigurationWithDifferentStreamsSaysTheAxisIsNotTheCause) {
  const CellReport& repack = Cell("repack=on");
  EXPECT_FALSE(repack.result.bit_identical());
  EXPECT_TRUE(repack.same_effective_as_baseline);
  EXPECT_EQ(repack.effective_note,
            "ran the same effective configuration as baseline: repack on ran as off; the "
            "streams still differ, not because of repack");
}

TEST_F(EffectiveReportTest, AttributionDoesNotCreditAnAxisThatChangedNothingTheEngineRan) {
  for (const auto* ranks : {&report_.by_kld, &report_.by_top1}) {
    ASSERT_EQ(ranks->size(), 1u);
    EXPECT_EQ((*ranks)[0].axis, "attention");
  }
}

TEST_F(EffectiveReportTest, TextJsonAndHtmlMarkTheCellsThatRanOtherSettings) {
  const std::string text = RenderText(report_);
  EXPECT_NE(text.find("Effective settings"), std::string::npos) << text;
  EXPECT_NE(text.find("kv      f32        f16     under flash attention"), std::string::npos)
      << text;
  EXPECT_NE(text.find("same effective configuration as baseline"), std::string::npos);
  const json doc = json::parse(RenderJson(report_));
  const json& kv = doc["workloads"][0]["cells"][0];
  ASSERT_EQ(kv["label"], "kv=f32");
  EXPECT_EQ(kv["effective"]["same_as_baseline"], true);
  EXPECT_EQ(kv["effective"]["differences"][0], (json{{"axis", "kv"},
                                                     {"requested", "f32"},
                                                     {"effective", "f16"},
                                                     {"why", "under flash attention"}}));
  EXPECT_EQ(doc["workloads"][0]["baseline"]["effective"]["axes"]["kv"], "f16");
  const std::string html = RenderHtml(report_);
  EXPECT_NE(html.find("kv f32 ran as f16 under flash attention"), std::string::npos);
}

}  // namespace
}  // namespace orch::report
