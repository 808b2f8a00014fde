// Generation in full (report/generation.h): along the common prefix, the first divergence
// as an argmax flip or a sampled draw with both margins against the baseline's noise band,
// the generated texts, and the plots of one workload on one x range.
#include "report/generation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "report/generation_render.h"
#include "report/render.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::MakeMemoryStore();
    testing::BuildGenerationExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "generation");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<Report> report = BuildReport(*input, *source, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
    ASSERT_EQ(report_.workloads.size(), 1u);
    ASSERT_EQ(report_.workloads[0].cells.size(), 2u);
  }
  const CellReport& Cell(const std::string& label) const {
    for (const CellReport& c : report_.workloads[0].cells) {
      if (c.cell.label == label) return c;
    }
    ADD_FAILURE() << "no cell " << label;
    return report_.workloads[0].baseline;
  }

  std::unique_ptr<store::Store> store_;
  Report report_;
};

TEST_F(GenerationTest, AnArgmaxFlipIsClassifiedWithBothMarginsAgainstTheBaselineRepeatNoise) {
  const CellReport& c = Cell("attention=on");
  const GenerationDetail& d = c.generation;
  ASSERT_TRUE(d.applies);
  ASSERT_TRUE(d.divergence.has_value());
  EXPECT_EQ(d.divergence->kind, DivergenceKind::kArgmaxFlip);
  EXPECT_EQ(d.divergence->index, testing::kFlipTokenIndex);
  EXPECT_EQ(d.divergence->position, testing::kFlipTokenIndex);
  EXPECT_EQ(d.divergence->reference_argmax, 4);
  EXPECT_EQ(d.divergence->other_argmax, 5);
  EXPECT_NEAR(d.divergence->reference_margin, 0.05, 1e-6);
  EXPECT_NEAR(d.divergence->other_margin, 0.05, 1e-6);
  ASSERT_TRUE(d.noise.available);
  EXPECT_EQ(d.noise.repeats, 2);
  EXPECT_NEAR(d.noise.band, testing::kGenerationRepeatNoise, 1e-6);
  EXPECT_EQ(d.divergence->reference_within_band, true);
  EXPECT_EQ(d.divergence->other_within_band, true);
  // The figures rest on the common prefix: 3 shared tokens and the divergence's position.
  EXPECT_EQ(d.common_prefix_tokens, 3u);
  EXPECT_EQ(d.reference_tokens, 6u);
  EXPECT_EQ(d.prefix_positions, 4u);
  EXPECT_EQ(CommonPrefixText(d), "common prefix of 3 of 6 tokens");
  EXPECT_EQ(c.result.kld_exact.count, 4u);
  EXPECT_EQ(c.result.estimates.top1_agreement.n, 4u);
  EXPECT_DOUBLE_EQ(c.result.estimates.top1_agreement.mean, 0.75);
  EXPECT_EQ(d.reference_text, "The cat sat on the mat.\nIt purred.");
  EXPECT_EQ(d.other_text, "The cat sat on the rug.\nIt slept.");
}

TEST_F(GenerationTest, ASampledDrawWithAgreeingArgmaxesIsNotAFlip) {
  const GenerationDetail& d = Cell("sampler.seed=43").generation;
  ASSERT_TRUE(d.divergence.has_value());
  EXPECT_EQ(d.divergence->kind, DivergenceKind::kSampledDraw);
  EXPECT_EQ(d.divergence->index, testing::kDrawTokenIndex);
  EXPECT_EQ(d.divergence->reference_argmax, 3);
  EXPECT_EQ(d.divergence->other_argmax, 3);
  EXPECT_NEAR(d.divergence->reference_margin, 2.0, 1e-6);
  EXPECT_NEAR(d.divergence->other_margin, 2.0, 1e-6);
  EXPECT_EQ(d.divergence->reference_within_band, false);
  EXPECT_EQ(d.divergence->other_within_band, false);
  EXPECT_EQ(d.prefix_positions, 3u);
  EXPECT_EQ(DivergenceText(d), "sampled draw at token 3 (position 2), top-1 3");
}

TEST(GenerationDescribeTest, WithoutBaselineRepeatsThereIsNoNoiseBand) {
  PairResult r;
  r.generated_common_prefix = 1;
  r.reference_generated = 4;
  r.first_token_difference = TokenDifference{1, 2, 3, 1, 2, 3, 0.01, 0.02};
  const GenerationDetail d = DescribeGeneration(r, GenerationNoiseBand{});
  ASSERT_TRUE(d.divergence.has_value());
  EXPECT_EQ(d.divergence->kind, DivergenceKind::kArgmaxFlip);
  EXPECT_FALSE(d.divergence->reference_within_band.has_value());
  EXPECT_FALSE(d.divergence->other_within_band.has_value());
  EXPECT_EQ(NoiseBandText(d.noise), "none (the baseline has a single run)");
  EXPECT_EQ(WithinBandText(d.divergence->reference_within_band), "-");
}

TEST(GenerationDescribeTest, NoDivergenceWhenTheSequencesAgree) {
  PairResult r;
  r.generated_common_prefix = 4;
  r.reference_generated = 4;
  const GenerationDetail d = DescribeGeneration(r, GenerationNoiseBand{true, 0.5, 2});
  EXPECT_FALSE(d.divergence.has_value());
  EXPECT_EQ(DivergenceText(d), "none");
  EXPECT_EQ(CommonPrefixText(d), "common prefix of 4 of 4 tokens");
}

TEST(GenerationTextTest, GeneratedTextComesFromTheSummaryOrItsIdsDecoded) {
  EXPECT_EQ(ParseGeneratedText(R"({"done": {"generated_text": "a\nb"}})"), "a\nb");
  EXPECT_FALSE(ParseGeneratedText(R"({"done": {}})").has_value());
  EXPECT_FALSE(ParseGeneratedText("not json").has_value());
  class Decoder : public TokenDecoder {
   public:
    std::optional<std::string> Decode(std::int32_t id) const override {
      if (id == 1) return std::string("hi");
      return std::nullopt;
    }
  } decoder;
  EXPECT_EQ(GeneratedTextOf(R"({"done": {"generated_ids": [1, 9]}})", &decoder), "hi<9>");
  EXPECT_FALSE(GeneratedTextOf(R"({"done": {"generated_ids": [1]}})", nullptr).has_value());
  EXPECT_EQ(FirstLine("one\ntwo"), "one");
}

TEST_F(GenerationTest, TextGivesThePrefixFiguresTheDivergenceAndTheFirstLineOfEachText) {
  const std::string text = RenderText(report_, testing::kUnwrapped);
  EXPECT_NE(text.find("common prefix of 3 of 6 tokens; 4 positions"), std::string::npos) << text;
  EXPECT_NE(text.find("argmax flip at token 4 (position 3), top-1 4 / 5"), std::string::npos);
  EXPECT_NE(text.find("sampled draw at token 3 (position 2), top-1 3"), std::string::npos);
  EXPECT_NE(text.find("noise band 0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("(from the baseline's 2 repeats)"), std::string::npos) << text;
  EXPECT_NE(text.find("0.05000 / 0.05000, both within the band"), std::string::npos);
  EXPECT_NE(text.find("2.000 / 2.000, neither within the band"), std::string::npos);
  EXPECT_NE(text.find("n=4"), std::string::npos);  // KLD and top-1 on the prefix
  EXPECT_NE(text.find("The cat sat on the mat."), std::string::npos);
  EXPECT_NE(text.find("The cat sat by the door."), std::string::npos);
  EXPECT_EQ(text.find("It purred."), std::string::npos);  // the first line only
}

TEST_F(GenerationTest, JsonHasTheGenerationObjectAndTheFullTexts) {
  const nlohmann::json json = nlohmann::json::parse(RenderJson(report_));
  const nlohmann::json& w = json["workloads"][0];
  EXPECT_EQ(w["baseline"]["generated_text"], "The cat sat on the mat.\nIt purred.");
  const nlohmann::json& g = w["cells"][0]["comparison"]["generation"];
  EXPECT_EQ(g["basis"], "common prefix of 3 of 6 tokens");
  EXPECT_EQ(g["positions"], 4);
  EXPECT_EQ(g["first_divergence"]["kind"], "argmax flip");
  EXPECT_EQ(g["first_divergence"]["reference"]["argmax"], 4);
  EXPECT_EQ(g["first_divergence"]["other"]["within_noise_band"], true);
  EXPECT_EQ(g["noise_band"]["available"], true);
  EXPECT_EQ(g["reference_text"], "The cat sat on the mat.\nIt purred.");
  EXPECT_EQ(g["other_text"], "The cat sat on the rug.\nIt slept.");
  EXPECT_EQ(w["cells"][1]["comparison"]["generation"]["first_divergence"]["kind"], "sampled draw");
}

TEST_F(GenerationTest, CsvHasTheGenerationColumns) {
  const auto rows = testing::ParseCsv(RenderCsv(report_));
  ASSERT_EQ(rows.size(), 4u);  // header, baseline, two cells (texts with newlines quoted)
  auto column = [&rows](const std::string& name) {
    for (std::size_t i = 0; i < rows[0].size(); ++i) {
      if (rows[0][i] == name) return i;
    }
    ADD_FAILURE() << "no column " << name;
    return std::size_t{0};
  };
  for (const auto& row : rows) ASSERT_EQ(row.size(), rows[0].size());
  EXPECT_EQ(rows[1][column("generation_reference_text")], "The cat sat on the mat.\nIt purred.");
  EXPECT_EQ(rows[2][column("generation_basis")], "common prefix of 3 of 6 tokens");
  EXPECT_EQ(rows[2][column("generation_positions")], "4");
  EXPECT_EQ(rows[2][column("generation_divergence_kind")], "argmax flip");
  EXPECT_EQ(rows[2][column("generation_reference_margin_within_band")], "true");
  EXPECT_EQ(rows[2][column("generation_other_text")], "The cat sat on the rug.\nIt slept.");
  EXPECT_EQ(rows[3][column("generation_divergence_kind")], "sampled draw");
  EXPECT_EQ(rows[3][column("generation_reference_argmax")], "3");
  EXPECT_EQ(rows[3][column("generation_other_argmax")], "3");
  EXPECT_EQ(rows[3][column("generation_other_margin_within_band")], "false");
}

TEST_F(GenerationTest, HtmlShowsTheTextsSideBySideAndEveryPlotOnOneXRange) {
  const std::string html = RenderHtml(report_);
  EXPECT_NE(html.find("<table class=\"generated\">"), std::string::npos);
  // Full texts, both lines, baseline and cell in one row.
  EXPECT_NE(html.find("<td class=\"generated-text\">The cat sat on the mat.\nIt purred.</td>"
                      "<td class=\"generated-text\">The cat sat on the rug.\nIt slept.</td>"),
            std::string::npos)
      << html;
  // The two cells' figures stop at positions 3 and 2; their plots still span 6 positions.
  const std::regex positions("data-positions=\"([0-9]+)\"");
  std::set<std::string> seen;
  int plots = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), positions);
       it != std::sregex_iterator(); ++it, ++plots) {
    seen.insert((*it)[1].str());
  }
  EXPECT_EQ(plots, 2);
  EXPECT_EQ(seen, std::set<std::string>{"6"});
  EXPECT_NE(html.find("class=\"divergence\""), std::string::npos);
  EXPECT_NE(html.find("data-margin-scale=\"log\""), std::string::npos);
}

// On the log margin track a near-tie of 0.05 beside margins of 2 is drawn at a height that
// shows (a linear track from 0 to 2 would give it 1 of 40 pixels).
TEST_F(GenerationTest, ANearTieMarginIsVisibleOnTheLogTrack) {
  const std::string html = RenderHtml(report_);
  const std::regex near_tie(
      "class=\"near-tie\" x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"[0-9.]+\" "
      "height=\"([0-9.]+)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, near_tie)) << html;
  EXPECT_GT(std::stod(m[1].str()), 10.0);
}

std::string GenerationGoldenPath(const std::string& name) {
  return std::string(ORCH_SOURCE_DIR) + "/tests/report/testdata/" + name;
}

// Compares with the golden file; ORCH_UPDATE_GOLDEN=1 rewrites it instead.
void ExpectGenerationGolden(const std::string& name, const std::string& actual) {
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(GenerationGoldenPath(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(GenerationGoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << "missing golden " << GenerationGoldenPath(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "rerun with ORCH_UPDATE_GOLDEN=1 to accept";
}

TEST_F(GenerationTest, TextMatchesGolden) {
  ExpectGenerationGolden("generation.report.txt", RenderText(report_));
}
TEST_F(GenerationTest, JsonMatchesGolden) {
  ExpectGenerationGolden("generation.report.json", RenderJson(report_));
}
TEST_F(GenerationTest, CsvMatchesGolden) {
  ExpectGenerationGolden("generation.report.csv", RenderCsv(report_));
}
TEST_F(GenerationTest, HtmlMatchesGolden) {
  ExpectGenerationGolden("generation.report.html", RenderHtml(report_));
}

}  // namespace
}  // namespace orch::report
