// A report where one cell's engine returned only its top-k log-probabilities (a server
// engine), read from a RocksDB store on disk: every KLD and identity figure of that cell
// names the returned top-k basis, none is averaged with exact values, and the attribution
// ranks it apart (docs/metrics.md "Top-k-only rows", docs/report.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "digest/top_logprobs.h"
#include "report/render.h"
#include "report/report.h"
#include "store/rocksdb_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

constexpr std::uint64_t kPositions = 12;
constexpr std::uint32_t kReturned = 3;

// The server's answer at `position`: the 3 most likely tokens of a row a little off the
// baseline's, as log-probabilities (log-softmax), with the target's when it was returned.
digest::PositionRecord ServerRecord(std::uint64_t position) {
  const auto top = static_cast<std::int32_t>(position % testing::kVocab);
  const std::vector<float> row = testing::TwoPeakRow(top, (top + 1) % testing::kVocab, 0.7);
  double sum = 0.0;
  for (float v : row) sum += std::exp(double{v});
  std::vector<std::int32_t> ids;
  std::vector<float> logprobs;
  for (std::int32_t id : {top, (top + 1) % static_cast<std::int32_t>(testing::kVocab),
                          (top + 2) % static_cast<std::int32_t>(testing::kVocab)}) {
    ids.push_back(id);
    logprobs.push_back(static_cast<float>(row[static_cast<std::size_t>(id)] - std::log(sum)));
  }
  digest::PositionRecord record;
  record.position = position;
  record.input_token = static_cast<std::int32_t>(position % testing::kVocab);
  const Status s = digest::DigestTopLogprobs(
      {digest::kCurrentDigestVersion, ids, logprobs, testing::kVocab, testing::TargetAt(position),
       std::numeric_limits<float>::quiet_NaN(), 0},
      &record.digest);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return record;
}

std::vector<digest::PositionRecord> FullRecords(double margin) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    const auto top = static_cast<std::int32_t>(i % testing::kVocab);
    const std::vector<float> row = testing::TwoPeakRow(top, (top + 1) % testing::kVocab, margin);
    out.push_back(testing::MakeRecord(i, row, testing::TargetAt(i), /*full=*/true));
  }
  return out;
}

class TopKReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("orch-topk-report-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    Result<std::unique_ptr<store::Store>> store = store::OpenRocksDbStore(dir_.string(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    testing::ExperimentBuilder plan("servers");
    plan.Workload("wiki", "teacher_forced", static_cast<int>(kPositions));
    plan.Cell("baseline").Cell("quant=q8_0").Cell("engine=vllm@0.11.0");
    const std::string base = plan.Job("baseline", "wiki", 0);
    const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
    const std::string server = plan.Job("engine=vllm@0.11.0", "wiki", 0);
    plan.Submit(**store);
    testing::AddSucceededRun(**store, base, "run-base", FullRecords(0.5));
    testing::AddSucceededRun(**store, quant, "run-quant", FullRecords(0.4));
    std::vector<digest::PositionRecord> served;
    for (std::uint64_t i = 0; i < kPositions; ++i) served.push_back(ServerRecord(i));
    testing::AddSucceededRun(**store, server, "run-server", served);
    Result<ExperimentInput> input = LoadExperiment(**store, "servers");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(**store);
    Result<Report> report = BuildReport(*input, *source, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  const CellReport& Cell(const std::string& label) const {
    for (const CellReport& c : report_.workloads.at(0).cells) {
      if (c.cell.label == label) return c;
    }
    ADD_FAILURE() << "no cell " << label;
    static const CellReport kNone;
    return kNone;
  }

  std::filesystem::path dir_;
  Report report_;
};

TEST_F(TopKReportTest, TheTopKCellsKldRestsOnReturnedTopKAndIsNeverMixedWithExact) {
  const CellReport& server = Cell("engine=vllm@0.11.0");
  ASSERT_EQ(server.status, CellStatus::kCompared) << server.reason;
  const PairResult& r = server.result;
  EXPECT_EQ(r.kld_returned_top_k.count, kPositions);
  EXPECT_GT(r.kld_returned_top_k.mean, 0.0);
  EXPECT_EQ(r.kld_exact.count, 0u);
  EXPECT_EQ(r.kld_bound.count, 0u);
  EXPECT_EQ(r.summary.kld.count, 0u);  // the full-row statistics hold no returned value
  EXPECT_EQ(r.returned_top_k.k_min, kReturned);
  EXPECT_EQ(r.returned_top_k.other_rows, kPositions);
  EXPECT_EQ(r.returned_top_k.reference_rows, 0u);
  EXPECT_EQ(ReturnedTopKName(r.returned_top_k), "returned top-k (K=3)");
  // A full row against a returned top-k: identity is not comparable, never "differs".
  EXPECT_EQ(r.summary.not_comparable_rows, kPositions);
  EXPECT_FALSE(r.summary.first_divergence.has_value());
  EXPECT_EQ(IdentityBasis(r), "not comparable (full rows vs returned top-k)");
  // The full-row cell keeps its exact basis.
  EXPECT_EQ(Cell("quant=q8_0").result.kld_exact.count, kPositions);
  EXPECT_EQ(Cell("quant=q8_0").result.kld_returned_top_k.count, 0u);
}

TEST_F(TopKReportTest, AttributionRanksTheReturnedTopKKldApartAndSaysSo) {
  ASSERT_EQ(report_.by_kld.size(), 1u);
  EXPECT_EQ(report_.by_kld[0].axis, "quant");
  EXPECT_EQ(report_.by_kld[0].kld_method, "exact");
  ASSERT_EQ(report_.by_kld_returned_top_k.size(), 1u);
  EXPECT_EQ(report_.by_kld_returned_top_k[0].axis, "engine");
  EXPECT_EQ(report_.by_kld_returned_top_k[0].kld_method, "returned top-k (K=3)");
  EXPECT_EQ(report_.by_top1.size(), 2u);  // argmax agreement is defined on both bases

  const std::string text = RenderText(report_, testing::kUnwrapped);
  EXPECT_NE(text.find("KLD returned top-k mean"), std::string::npos) << text;
  EXPECT_NE(text.find("(returned top-k (K=3))"), std::string::npos) << text;
  EXPECT_NE(text.find("not comparable (full rows vs returned top-k (K=3))"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Attribution on the returned top-k basis (ranked apart"), std::string::npos)
      << text;
  const std::size_t full_rank = text.find("Attribution by KLD mean");
  ASSERT_NE(full_rank, std::string::npos);
  const std::size_t apart = text.find("Attribution by top-1 disagreement");
  // The main ranking does not list the server cell by KLD.
  const std::string main_ranking = text.substr(full_rank, apart - full_rank);
  EXPECT_NE(main_ranking.find("quant=q8_0 (wiki)  "), std::string::npos) << main_ranking;
  EXPECT_EQ(main_ranking.find("(returned top-k"), std::string::npos) << main_ranking;
  EXPECT_EQ(main_ranking.find("engine="), std::string::npos) << main_ranking;
}

TEST_F(TopKReportTest, JsonNamesTheBasisOfEveryFigure) {
  const nlohmann::json doc = nlohmann::json::parse(RenderJson(report_));
  const nlohmann::json* server = nullptr;
  for (const nlohmann::json& c : doc["workloads"][0]["cells"]) {
    if (c["label"] == "engine=vllm@0.11.0") server = &c;
  }
  ASSERT_NE(server, nullptr) << doc.dump(2);
  const nlohmann::json& cmp = (*server)["comparison"];
  EXPECT_EQ(cmp["identity_basis"], "not comparable (full rows vs returned top-k)");
  EXPECT_EQ(cmp["not_comparable_rows"], kPositions);
  EXPECT_EQ(cmp["kld_returned_top_k"]["basis"], "returned top-k (K=3)");
  EXPECT_EQ(cmp["kld_returned_top_k"]["count"], kPositions);
  EXPECT_EQ(cmp["kld_returned_top_k"]["k_max"], kReturned);
  EXPECT_EQ(cmp["kld"]["count"], 0);
  EXPECT_EQ(cmp["kld"]["method"], "none");
  const nlohmann::json& apart = doc["attribution"]["by_kld_returned_top_k"];
  ASSERT_EQ(apart.size(), 1u);
  EXPECT_EQ(apart[0]["kld_method"], "returned top-k (K=3)");
  for (const nlohmann::json& rank : doc["attribution"]["by_kld"]) {
    EXPECT_NE(rank["axis"], "engine") << rank.dump();
  }
}

TEST_F(TopKReportTest, ThePlotDrawsTheReturnedTopKSeriesApartAndNamesIt) {
  const PositionPlot& server = Cell("engine=vllm@0.11.0").result.plot;
  ASSERT_EQ(server.max_returned_kld.size(), kPositions);
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    EXPECT_TRUE(std::isfinite(server.max_returned_kld[i])) << i;
    EXPECT_TRUE(std::isnan(server.max_kld[i])) << i;  // never merged with exact or bound
    EXPECT_TRUE(std::isnan(server.max_exact_kld[i])) << i;
  }
  const PositionPlot& full = Cell("quant=q8_0").result.plot;
  for (double v : full.max_returned_kld) EXPECT_TRUE(std::isnan(v));

  const std::string html = RenderHtml(report_);
  const std::size_t plot = html.find("data-cell=\"engine=vllm@0.11.0\"");
  ASSERT_NE(plot, std::string::npos);
  const std::string svg = html.substr(plot, html.find("</svg>", plot) - plot);
  EXPECT_NE(svg.find("green squares = KLD over a server's returned top k"), std::string::npos);
  std::size_t squares = 0;
  for (std::size_t at = svg.find("class=\"returned\""); at != std::string::npos;
       at = svg.find("class=\"returned\"", at + 1)) {
    ++squares;
  }
  EXPECT_EQ(squares, kPositions);
  const std::size_t other = html.find("data-cell=\"quant=q8_0\"");
  ASSERT_NE(other, std::string::npos);
  const std::string full_svg = html.substr(other, html.find("</svg>", other) - other);
  EXPECT_EQ(full_svg.find("green squares"), std::string::npos);

  const nlohmann::json doc = nlohmann::json::parse(RenderJson(report_));
  for (const nlohmann::json& c : doc["workloads"][0]["cells"]) {
    if (c["label"] != "engine=vllm@0.11.0") continue;
    EXPECT_EQ(c["comparison"]["plot"]["max_returned_top_k_kld"].size(), kPositions);
    EXPECT_TRUE(c["comparison"]["plot"]["max_returned_top_k_kld"][0].is_number());
  }
}

}  // namespace
}  // namespace orch::report
