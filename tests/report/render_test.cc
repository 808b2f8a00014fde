#include "report/render.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/tables.h"
#include "store/memory_store.h"
#include "store/rocksdb_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

Report StandardReport() {
  auto store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "standard");
  EXPECT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return std::move(report).value();
}

std::string GoldenPath(const std::string& name) {
  return std::string(ORCH_SOURCE_DIR) + "/tests/report/testdata/" + name;
}

// Compares with the golden file; ORCH_UPDATE_GOLDEN=1 rewrites it instead.
void ExpectGolden(const std::string& name, const std::string& actual) {
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(GoldenPath(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(GoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << "missing golden " << GoldenPath(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "rerun with ORCH_UPDATE_GOLDEN=1 to accept";
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(RenderTest, JsonMatchesGolden) {
  ExpectGolden("standard.report.json", RenderJson(StandardReport()));
}

TEST(RenderTest, CsvMatchesGolden) {
  ExpectGolden("standard.report.csv", RenderCsv(StandardReport()));
}

TEST(RenderTest, TextMatchesGolden) {
  ExpectGolden("standard.report.txt", RenderText(StandardReport()));
}

TEST(RenderTest, CsvHasOneRowPerWorkloadAndCellWithAFixedColumnCount) {
  const std::string csv = RenderCsv(StandardReport());
  // Header + wiki (baseline + 3 cells) + gen (baseline + 1 cell).
  EXPECT_EQ(Count(csv, "\n"), 7u);
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(Count(header, ","), 69u);
}

TEST(RenderTest, TextShowsTheFailedCellWithItsReason) {
  const std::string text = RenderText(StandardReport());
  EXPECT_NE(text.find("kv=q8_0"), std::string::npos);
  EXPECT_NE(text.find(testing::kStandardFailure), std::string::npos);
  EXPECT_NE(text.find("reference: baseline repeat 0 (run run-b0)"), std::string::npos);
}

TEST(RenderTest, HtmlHasOneInlinePlotPerComparedCellAndNoExternalResource) {
  const std::string html = RenderHtml(StandardReport());
  // attention=on and quant=q8_0 (wiki), sampler.seed=43 (gen); the failed cell has none.
  EXPECT_EQ(Count(html, "<svg"), 3u);
  EXPECT_EQ(Count(html, "</svg>"), 3u);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("host.cpu.model_name"), std::string::npos);
  EXPECT_NE(html.find(testing::kStandardFailure), std::string::npos);
}

// The standard experiment's generate workload requests 8 tokens and every run stored 6
// without a stop reason: each rendering says so.
TEST(RenderTest, EveryRenderingFlagsGenerationsShorterThanRequested) {
  const Report report = StandardReport();
  const std::string message =
      "baseline run generated 6 of 8 requested tokens (its driver gave no stop reason)";
  EXPECT_NE(RenderText(report).find(message), std::string::npos);
  EXPECT_NE(RenderCsv(report).find("generation_short: " + message), std::string::npos);
  const std::string json = RenderJson(report);
  EXPECT_NE(json.find("\"kind\": \"generation_short\""), std::string::npos);
  EXPECT_NE(json.find(message), std::string::npos);
  const std::string html = RenderHtml(report);
  EXPECT_NE(html.find("<li class=\"warning\" data-kind=\"generation_short\">"), std::string::npos);
  EXPECT_NE(html.find(message), std::string::npos);
}

// A cell whose full rows were kept at 2 of its 8 positions (full_every = 4): each exact
// KLD figure says it rests on 2 of 8 positions.
TEST(RenderTest, ExactKldFiguresSayOnHowManyPositionsTheyRest) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("partly");
  plan.Workload("wiki", "teacher_forced", 8, 4).Cell("baseline").Cell("attention=on");
  const std::string b = plan.Job("baseline", "wiki", 0);
  const std::string a = plan.Job("attention=on", "wiki", 0);
  plan.Submit(*store);
  std::vector<digest::PositionRecord> base, cell;
  for (std::uint64_t i = 0; i < 8; ++i) {
    base.push_back(
        testing::MakeRecord(i, testing::BaselineRow(i), testing::TargetAt(i), i % 4 == 0));
    cell.push_back(
        testing::MakeRecord(i, testing::AttentionRow(i), testing::TargetAt(i), i % 4 == 0));
  }
  testing::AddSucceededRun(*store, b, "run-b", base);
  testing::AddSucceededRun(*store, a, "run-a", cell);
  Result<ExperimentInput> input = LoadExperiment(*store, "partly");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::string text = RenderText(*report);
  EXPECT_EQ(Count(text, "(exact on 2 of 8 positions)"), 2u) << text;  // cells, attribution
  EXPECT_NE(text.find("  attention=on  2 of 8 "), std::string::npos) << text;
  nlohmann::json json = nlohmann::json::parse(RenderJson(*report));
  const nlohmann::json& comparison = json["workloads"][0]["cells"][0]["comparison"];
  EXPECT_EQ(comparison["kld_exact_coverage"],
            nlohmann::json(
                {{"exact_positions", 2}, {"positions", 8}, {"text", "exact on 2 of 8 positions"}}));
  EXPECT_EQ(json["attribution"]["by_kld"][0]["exact_positions"], 2);
  EXPECT_EQ(json["attribution"]["by_kld"][0]["compared_positions"], 8);
}

// Exact and bound KLD are named apart: wiki is all exact (full rows everywhere), gen all
// top-k bound (no full rows).
TEST(RenderTest, EveryRenderingNamesExactAndBoundKldApart) {
  const Report report = StandardReport();
  const std::string text = RenderText(report);
  EXPECT_NE(text.find("KLD exact mean"), std::string::npos);
  EXPECT_NE(text.find("KLD bound mean"), std::string::npos);
  EXPECT_NE(text.find("KL divergence by method"), std::string::npos);
  // The attribution names the method and how many positions it covers.
  EXPECT_NE(text.find("0.18088 (exact on 40 of 40 positions)"), std::string::npos);
  const std::string json = RenderJson(report);
  EXPECT_NE(json.find("\"method\": \"exact\""), std::string::npos);
  EXPECT_NE(json.find("\"method\": \"bound\""), std::string::npos);
  EXPECT_NE(json.find("\"kld_exact\": {"), std::string::npos);
  EXPECT_NE(json.find("\"kld_bound\": {"), std::string::npos);
  const std::string csv = RenderCsv(report);
  EXPECT_NE(csv.find("kld_method,kld_exact_count,kld_exact_mean"), std::string::npos);
  EXPECT_NE(csv.find(",exact,40,0.1808849227,"), std::string::npos);
  EXPECT_NE(csv.find(",bound,0,,,,,3,"), std::string::npos);
  EXPECT_NE(RenderHtml(report).find("KL divergence by method"), std::string::npos);
}

TEST(FormatKldTest, SmallNonzeroDivergencesKeepTheirMagnitude) {
  EXPECT_EQ(FormatKld(0.0617030506), "0.06170");
  EXPECT_EQ(FormatKld(0.000694), "6.94e-04");
  EXPECT_EQ(FormatKld(2.29e-06), "2.29e-06");
  EXPECT_EQ(FormatKld(0.0), "0.00000");
  EXPECT_EQ(FormatKld(std::nan("")), "-");
}

TEST(FormatTokenTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(FormatToken({17, std::nullopt}), "17");
  EXPECT_EQ(FormatToken({17, " math"}), "17 \" math\"");
  EXPECT_EQ(FormatToken({5, std::string("a\"b\\c\n\t\x01\x7f") + "\xc3\xa9"}),
            "5 \"a\\\"b\\\\c\\n\\t\\x01\\x7f\xc3\xa9\"");
}

}  // namespace
}  // namespace orch::report

namespace orch::report {
namespace {

// The same experiment in a RocksDB store (as `orch report` reads it) gives the same report.
TEST(RenderTest, RocksDbStoreGivesTheSameJsonAsTheMemoryStore) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-report-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    Result<std::unique_ptr<store::Store>> store = store::OpenRocksDbStore(dir.string(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    testing::BuildStandardExperiment(**store);
    Result<ExperimentInput> input = LoadExperiment(**store, "standard");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(**store);
    Result<Report> report = BuildReport(*input, *source, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(RenderJson(*report), RenderJson(StandardReport()));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace orch::report
