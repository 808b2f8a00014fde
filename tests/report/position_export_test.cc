// The per-position export (report/position_export.h) of the standard experiment: golden
// CSV and JSON, and its rows against what the report aggregates from the same runs.
#include "report/position_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using ::testing::HasSubstr;

class PositionExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildStandardExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "standard");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    Result<Report> report = BuildReport(*input, *source_, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  std::string Export(PositionFormat format) {
    std::ostringstream out;
    Status status = WritePositions(report_, *source_, nullptr, format, out);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return out.str();
  }

  const CellReport& Cell(const std::string& workload, const std::string& label) const {
    for (const WorkloadReport& w : report_.workloads) {
      if (w.workload.name != workload) continue;
      for (const CellReport& c : w.cells) {
        if (c.cell.label == label) return c;
      }
    }
    ADD_FAILURE() << "no cell " << label << " in " << workload;
    return report_.workloads.front().baseline;
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  std::unique_ptr<RunSource> source_ = MakeStoreRunSource(*store_);
  Report report_;
};

std::string ExportGoldenPath(const std::string& name) {
  return std::string(ORCH_SOURCE_DIR) + "/tests/report/testdata/" + name;
}

// Compares with the golden file; ORCH_UPDATE_GOLDEN=1 rewrites it instead.
void ExpectExportGolden(const std::string& name, const std::string& actual) {
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(ExportGoldenPath(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(ExportGoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << "missing golden " << ExportGoldenPath(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "rerun with ORCH_UPDATE_GOLDEN=1 to accept";
}

TEST_F(PositionExportTest, CsvMatchesGolden) {
  ExpectExportGolden("standard.positions.csv", Export(PositionFormat::kCsv));
}

TEST_F(PositionExportTest, JsonMatchesGolden) {
  ExpectExportGolden("standard.positions.json", Export(PositionFormat::kJson));
}

// The rows of each (workload, cell, repeat), from the JSON export.
std::map<std::string, std::vector<nlohmann::json>> RowsByPair(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["schema"], "orch.positions/1");
  EXPECT_EQ(doc["experiment"], "standard");
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const nlohmann::json& row : doc["rows"]) {
    std::string key = row["workload"].get<std::string>() + "/" + row["cell"].get<std::string>() +
                      "/" + std::to_string(row["repeat"].get<int>());
    out[key].push_back(row);
  }
  return out;
}

TEST_F(PositionExportTest, ExportedValuesAggregateToTheReportsSummary) {
  auto pairs = RowsByPair(Export(PositionFormat::kJson));
  for (const char* label : {"attention=on", "quant=q8_0"}) {
    const CellReport& cell = Cell("wiki", label);
    const std::vector<nlohmann::json>& rows = pairs["wiki/" + std::string(label) + "/0"];
    ASSERT_EQ(rows.size(), cell.result.summary.compared) << label;
    double exact_sum = 0.0;
    std::uint64_t exact = 0, flips = 0, near_ties = 0, clusters = 0;
    for (const nlohmann::json& row : rows) {
      EXPECT_EQ(row["run"], cell.other_run);
      EXPECT_EQ(row["reference_run"], cell.reference_run);
      if (row["kld_kind"] == "exact") {
        ++exact;
        exact_sum += row["kld"].get<double>();
      }
      if (row["flip"] == true) {
        ++flips;
        if (row["near_tie"] == true) ++near_ties;
        clusters = std::max(clusters, row["cluster"].get<std::uint64_t>());
      }
    }
    EXPECT_EQ(exact, cell.result.kld_exact.count) << label;
    EXPECT_NEAR(exact_sum / static_cast<double>(exact), cell.result.kld_exact.mean,
                1e-12 * std::abs(cell.result.kld_exact.mean))
        << label;
    EXPECT_EQ(flips, cell.result.flip_count) << label;
    EXPECT_EQ(near_ties, cell.near_tie_flips) << label;
    EXPECT_EQ(clusters, cell.result.cluster_count) << label;
    ASSERT_FALSE(cell.result.flips.empty());
    const Flip& first = cell.result.flips.front();
    const nlohmann::json& at = rows[first.position];
    EXPECT_EQ(at["position"], first.position);
    EXPECT_EQ(at["top1_reference"], first.reference_token);
    EXPECT_EQ(at["top1_cell"], first.other_token);
    EXPECT_DOUBLE_EQ(at["margin"].get<double>(), first.margin);
  }
}

// The digest keeps the target's logit as a float: within float precision of the exact value.
TEST_F(PositionExportTest, TargetLogProbabilitiesAreTheNegatedNllOfEachSide) {
  auto pairs = RowsByPair(Export(PositionFormat::kJson));
  const std::vector<nlohmann::json>& rows = pairs["wiki/attention=on/0"];
  ASSERT_FALSE(rows.empty());
  for (std::uint64_t position : {0u, 10u}) {
    const nlohmann::json& row = rows[position];
    EXPECT_EQ(row["target"], testing::TargetAt(position));
    EXPECT_NEAR(row["target_logprob_reference"].get<double>(),
                -testing::ReferenceNll(testing::BaselineRow(position), testing::TargetAt(position)),
                1e-6);
    EXPECT_NEAR(
        row["target_logprob_cell"].get<double>(),
        -testing::ReferenceNll(testing::AttentionRow(position), testing::TargetAt(position)), 1e-6);
  }
}

TEST_F(PositionExportTest, TheBaselinesOtherRepeatsAreExportedAgainstItsFirst) {
  auto pairs = RowsByPair(Export(PositionFormat::kJson));
  const std::vector<nlohmann::json>& rows = pairs["wiki/baseline/1"];
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(testing::kStandardPositions));
  EXPECT_EQ(pairs.count("wiki/baseline/0"), 0u) << "the reference against itself says nothing";
  EXPECT_EQ(pairs.count("wiki/kv=q8_0/0"), 0u) << "a failed cell has no rows";
  // Generate workloads: after the first differing generated token, not compared.
  const std::vector<nlohmann::json>& gen = pairs["gen/sampler.seed=43/0"];
  ASSERT_GE(gen.size(), 4u);
  EXPECT_NE(gen[2]["kld_kind"], "not_compared");
  EXPECT_EQ(gen[3]["kld_kind"], "not_compared");
  EXPECT_TRUE(gen[3]["kld"].is_null());
}

// A RunSource that notes, at every chunk a scan asks for after the first, how many lines
// the export had written by then.
class WatchedSource : public RunSource {
 public:
  WatchedSource(RunSource& inner, const std::ostringstream& out) : inner_(inner), out_(out) {}
  Status ScanRecords(std::string_view run_id, std::uint64_t from_position,
                     const RecordVisitor& visit) override {
    if (from_position > 0) {
      const std::string text = out_.str();
      lines_at_.emplace_back(from_position, std::count(text.begin(), text.end(), '\n'));
    }
    return inner_.ScanRecords(run_id, from_position, visit);
  }
  Result<std::string> GetFingerprint(std::string_view id) override {
    return inner_.GetFingerprint(id);
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> lines_at_;

 private:
  RunSource& inner_;
  const std::ostringstream& out_;
};

// 1,200 positions: the rows of the first chunk are in the stream before the second chunk
// is read, so the export never holds a run's positions.
TEST(PositionExportStreamTest, RowsAreWrittenBeforeTheNextChunkIsRead) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("long");
  plan.Workload("wiki", "teacher_forced", 1200).Cell("baseline").Cell("attention=on");
  const std::string b = plan.Job("baseline", "wiki", 0);
  const std::string a = plan.Job("attention=on", "wiki", 0);
  plan.Submit(*store);
  std::vector<digest::PositionRecord> base, cell;
  for (std::uint64_t i = 0; i < 1200; ++i) {
    base.push_back(testing::MakeRecord(i, testing::BaselineRow(i), testing::TargetAt(i), false));
    cell.push_back(testing::MakeRecord(i, testing::AttentionRow(i), testing::TargetAt(i), false));
  }
  testing::AddSucceededRun(*store, b, "run-b", base);
  testing::AddSucceededRun(*store, a, "run-a", cell);
  Result<ExperimentInput> input = LoadExperiment(*store, "long");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::ostringstream out;
  WatchedSource watched(*source, out);
  ASSERT_TRUE(WritePositions(*report, watched, nullptr, PositionFormat::kCsv, out).ok());
  ASSERT_FALSE(watched.lines_at_.empty());
  for (const auto& [from, lines] : watched.lines_at_) {
    EXPECT_GE(lines, 1 + from) << "header and every row before position " << from;
  }
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 1200);
}

class NamedTokens : public TokenDecoder {
 public:
  std::optional<std::string> Decode(std::int32_t token) const override {
    if (token == 3) return std::nullopt;  // unknown: left empty
    return "t" + std::to_string(token) + ",\"";
  }
};

TEST_F(PositionExportTest, TokenTextComesFromTheDecoderAndIsQuoted) {
  NamedTokens decoder;
  std::ostringstream out;
  ASSERT_TRUE(WritePositions(report_, *source_, &decoder, PositionFormat::kCsv, out).ok());
  // attention=on, position 10: input token 2, target 2 (TargetAt).
  EXPECT_THAT(out.str(), HasSubstr("\nwiki,attention=on,0,run-att,run-b0,10,2,\"t2,\"\"\",2,"
                                   "\"t2,\"\"\","));
  EXPECT_THAT(out.str(), HasSubstr("\nwiki,attention=on,0,run-att,run-b0,3,3,,3,,"));
}

TEST(PositionFormatTest, TheExtensionChoosesTheFormatAndAnyOtherIsNamed) {
  EXPECT_EQ(PositionFormatOf("out.csv").value(), PositionFormat::kCsv);
  EXPECT_EQ(PositionFormatOf("dir/OUT.JSON").value(), PositionFormat::kJson);
  Result<PositionFormat> bad = PositionFormatOf("positions.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "positions.txt: the file name must end in .csv or .json (the export's format)");
  EXPECT_FALSE(PositionFormatOf(".csv").ok());
}

TEST_F(PositionExportTest, AFailedWriteIsAnError) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  Status status = WritePositions(report_, *source_, nullptr, PositionFormat::kCsv, out);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("cannot write the per-position export"));
}

}  // namespace
}  // namespace orch::report
