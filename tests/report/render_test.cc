#include "report/render.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <nlohmann/json.hpp>

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
  EXPECT_EQ(Count(header, ","), 111u);
}

TEST(RenderTest, TextShowsTheFailedCellWithItsReason) {
  const std::string text = RenderText(StandardReport(), testing::kUnwrapped);
  EXPECT_NE(text.find("kv=q8_0"), std::string::npos);
  EXPECT_NE(text.find(testing::kStandardFailure), std::string::npos);
  EXPECT_NE(text.find("reference: baseline repeat 0 (run run-b0)"), std::string::npos);
}

TEST(RenderTest, HtmlHasOneInlinePlotPerComparedCellAndNoExternalResource) {
  const std::string html = RenderHtml(StandardReport());
  // attention=on and quant=q8_0 (wiki), sampler.seed=43 (gen); the failed cell has none.
  // Plus one interval whisker per attribution rank: 2 by KLD, 2 by top-1.
  EXPECT_EQ(Count(html, "<svg class=\"plot\""), 3u);
  EXPECT_EQ(Count(html, "<svg class=\"interval\""), 4u);
  EXPECT_EQ(Count(html, "</svg>"), 7u);
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
  EXPECT_NE(RenderText(report, testing::kUnwrapped).find(message), std::string::npos);
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
  const std::string text = RenderText(*report, testing::kUnwrapped);
  // The cell table; the attribution, which ranks by the bound mean over the other 6.
  EXPECT_EQ(Count(text, "exact on 2 of 8 positions)"), 2u) << text;
  EXPECT_NE(text.find("  attention=on  2 of 8 "), std::string::npos) << text;
  nlohmann::json json = nlohmann::json::parse(RenderJson(*report));
  const nlohmann::json& comparison = json["workloads"][0]["cells"][0]["comparison"];
  EXPECT_EQ(comparison["kld_exact_coverage"],
            nlohmann::json(
                {{"exact_positions", 2}, {"positions", 8}, {"text", "exact on 2 of 8 positions"}}));
  EXPECT_EQ(json["attribution"]["by_kld"][0]["exact_positions"], 2);
  EXPECT_EQ(json["attribution"]["by_kld"][0]["compared_positions"], 8);
}

// The attribution ranks by the KLD figure that rests on the most positions: with 2 exact
// positions of 8, the bound mean over the other 6, not the exact mean over 2.
TEST(AttributionFigureTest, RanksByTheKldMeanThatRestsOnTheMostPositions) {
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
  ASSERT_EQ(report->by_kld.size(), 1u);
  const AxisRank& rank = report->by_kld[0];
  const PairResult& r = report->workloads[0].cells[0].result;
  ASSERT_EQ(r.kld_exact.count, 2u);
  ASSERT_EQ(r.kld_bound.count, 6u);
  EXPECT_EQ(rank.kld_method, "bound");
  EXPECT_EQ(rank.kld_n, 6u);
  EXPECT_DOUBLE_EQ(rank.kld_mean, r.kld_bound.mean);
  EXPECT_NE(RenderText(*report, testing::kUnwrapped).find("n=6 (bound, exact on 2 of 8 positions)"),
            std::string::npos);
}

// Exact and bound KLD are named apart: wiki is all exact (full rows everywhere), gen all
// top-k bound (no full rows).
TEST(RenderTest, EveryRenderingNamesExactAndBoundKldApart) {
  const Report report = StandardReport();
  const std::string text = RenderText(report);
  EXPECT_NE(text.find("KLD exact mean"), std::string::npos);
  EXPECT_NE(text.find("KLD bound mean"), std::string::npos);
  EXPECT_NE(text.find("KL divergence by method"), std::string::npos);
  // The attribution names the method, how many positions it covers, n and the interval.
  EXPECT_NE(text.find("0.1809 [0.09044, 0.3316] n=40 (exact)"), std::string::npos);
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
  EXPECT_EQ(FormatKld(0.0), "0");
  EXPECT_EQ(FormatKld(std::nan("")), "-");
}

TEST(FormatNumberTest, ShowsSignificantDigitsNotFixedDecimals) {
  EXPECT_EQ(FormatNumber(4.1e-14, 4), "4.1e-14");
  EXPECT_EQ(FormatNumber(1.45989, 4), "1.460");
  EXPECT_EQ(FormatNumber(12345.67, 4), "12346");
  EXPECT_EQ(FormatNumber(2.5e7, 4), "2.5e+07");
  EXPECT_EQ(FormatNumber(-0.5, 4), "-0.5000");
}

TEST(FormatPercentTest, ANonzeroFractionNeverReadsAsZeroAndBelowOneNeverAsAHundred) {
  EXPECT_EQ(FormatPercent(3.2e-9), "3.2e-07%");  // an RMS dp of 3.2e-9 is not "0.000%"
  EXPECT_EQ(FormatPercent(0.95), "95.00%");
  EXPECT_EQ(FormatPercent(0.9999996), "99.99996%");
  EXPECT_EQ(FormatPercent(1.0), "100.0%");
  EXPECT_EQ(FormatPercent(0.0), "0%");
}

TEST(FormatEstimateTest, ShowsTheIntervalAndNOrSaysThereIsNone) {
  EXPECT_EQ(FormatEstimate(0.0617, 40, Interval{0.021, 0.11, "m"}, FormatKld),
            "0.06170 [0.02100, 0.1100] n=40");
  EXPECT_EQ(FormatEstimate(0.25, 1, Interval{}, FormatKld), "0.2500 (no interval) n=1");
  EXPECT_EQ(FormatEstimate(std::nan(""), 0, Interval{}, FormatKld), "-");
}

TEST(FormatTokenTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(FormatToken({17, std::nullopt}), "17");
  EXPECT_EQ(FormatToken({17, " math"}), "17 \" math\"");
  EXPECT_EQ(FormatToken({5, std::string("a\"b\\c\n\t\x01\x7f") + "\xc3\xa9"}),
            "5 \"a\\\"b\\\\c\\n\\t\\x01\\x7f\xc3\xa9\"");
}

// Drivers write a byte that is not UTF-8 as the four characters \xf3; the report shows
// it as it is, not escaped a second time ("\\xf3").
TEST(FormatTokenTest, ADriversByteEscapeIsShownOnce) {
  EXPECT_EQ(FormatToken({9, std::string("\\xf3")}), "9 \"\\xf3\"");
  EXPECT_EQ(TokenText({9, std::string("a\\xe2\\x80")}), "a\\xe2\\x80");
  EXPECT_EQ(FormatToken({9, std::string("\\n")}), "9 \"\\\\n\"");  // a literal backslash-n
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

namespace orch::report {
namespace {

std::size_t CodePoints(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(RenderTextWidthTest, NoLineIsWiderThanTheWidthAndNothingIsLostAtTheDefault) {
  const Report report = StandardReport();
  for (std::size_t width : {kDefaultTextWidth, std::size_t{60}}) {
    std::istringstream lines(RenderText(report, {width}));
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(CodePoints(line), width) << line;
    }
  }
  // At the default width the failed cell's reason wraps but is not cut.
  EXPECT_EQ(RenderText(report).find("…"), std::string::npos);
  // A column too wide for a narrow terminal is cut with the marker.
  EXPECT_NE(RenderText(report, {30}).find("…"), std::string::npos);
}

TEST(RenderTextQuorumTest, ASoloUsersReportSaysOnceThatEveryRunRestsOnOneContributor) {
  const std::string text = RenderText(StandardReport(), testing::kUnwrapped);
  // Once per workload, in the quorum table's title, and on no row.
  EXPECT_EQ(Count(text, "Quorum: every run rests on one contributor (lab)"), 2u);
  EXPECT_EQ(Count(text, "rests on one contributor"), 2u);
}

TEST(RenderTextTest, CommonPrefixNamesOneThingPerColumn) {
  const std::string text = RenderText(StandardReport(), testing::kUnwrapped);
  // "common prefix" only ever as the generated tokens' one, with what it counts.
  for (auto at = text.find("common prefix"); at != std::string::npos;
       at = text.find("common prefix", at + 1)) {
    EXPECT_EQ(text.substr(at, 17), "common prefix of ") << text;
    EXPECT_NE(text.substr(at, 40).find(" tokens"), std::string::npos) << text;
  }
  EXPECT_NE(text.find("identical positions"), std::string::npos);     // teacher-forced rows
  EXPECT_NE(text.find("generated-token prefix"), std::string::npos);  // generated tokens
}

// Attribution carries n and intervals, and says when the ranks cannot be told apart.
TEST(AttributionIntervalsTest, EveryRankShowsItsIntervalAndOverlapsAreNotSeparable) {
  const Report report = StandardReport();
  ASSERT_EQ(report.by_kld.size(), 2u);
  for (const AxisRank& k : report.by_kld) {
    EXPECT_EQ(k.kld_n, 40u);
    ASSERT_TRUE(k.kld_ci95.available()) << k.kld_ci95.method;
    EXPECT_LE(k.kld_ci95.lo, k.kld_mean);
    EXPECT_GE(k.kld_ci95.hi, k.kld_mean);
    EXPECT_EQ(k.kld_ci95.method, "block bootstrap (block 4, 1000 resamples)");
  }
  EXPECT_EQ(report.by_kld[0].kld_separability, "");
  // 0.06170 [0, 0.1846] overlaps 0.1809 [0.09044, 0.3316].
  EXPECT_EQ(report.by_kld[1].kld_separability,
            "not separable from rank 1 (quant=q8_0) at n=40 vs 40");
  EXPECT_EQ(report.by_top1[1].top1_ci95.method, "Wilson");
  const nlohmann::json doc = nlohmann::json::parse(RenderJson(report));
  const nlohmann::json& rank = doc["attribution"]["by_kld"][1];
  EXPECT_EQ(rank["kld_n"], 40);
  EXPECT_EQ(rank["kld_ci95"].size(), 2u);
  EXPECT_EQ(rank["kld_separability"], "not separable from rank 1 (quant=q8_0) at n=40 vs 40");
  const nlohmann::json& cmp = doc["workloads"][0]["cells"][0]["comparison"];
  EXPECT_EQ(cmp["kld_exact"]["n"], 40);
  EXPECT_EQ(cmp["kld_exact"]["ci95_method"], "block bootstrap (block 4, 1000 resamples)");
  EXPECT_EQ(cmp["top1_agreement_estimate"]["ci95_method"], "Wilson");
  EXPECT_EQ(cmp["flip_rate"]["n"], 40);
  EXPECT_EQ(cmp["ppl_ratio_estimate"]["n"], 40);
  EXPECT_TRUE(cmp["kld_bound"]["ci95"].is_null());
  EXPECT_EQ(cmp["kld_bound"]["ci95_method"], "no interval: n=0");
}

}  // namespace
}  // namespace orch::report
