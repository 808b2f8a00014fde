// Requested against compared: a report says when it compared fewer positions than the plan
// asked for, and when a generation stopped before max_tokens.
#include "report/warnings.h"

#include <gtest/gtest.h>

#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using testing::MakeRecord;
using testing::TwoPeakRow;

PlannedWorkload Generate(std::uint64_t max_tokens) {
  PlannedWorkload w;
  w.kind = WorkloadKind::kGenerate;
  w.max_tokens = max_tokens;
  return w;
}

PlannedWorkload TeacherForced(std::uint64_t positions) {
  PlannedWorkload w;
  w.positions = positions;
  return w;
}

TEST(GenerationStopTest, ReadsTheDriversStopReasonAndCount) {
  const GenerationStop stop =
      ParseGenerationStop(R"({"done": {"stop": "eos", "generated_tokens": 4}})");
  EXPECT_EQ(stop.reason, "eos");
  EXPECT_EQ(stop.generated, 4u);
  // Older drivers: the count from generated_ids, no reason.
  const GenerationStop old = ParseGenerationStop(R"({"done": {"generated_ids": [5, 6, 7]}})");
  EXPECT_EQ(old.reason, std::nullopt);
  EXPECT_EQ(old.generated, 3u);
  EXPECT_EQ(ParseGenerationStop("").reason, std::nullopt);
  EXPECT_EQ(ParseGenerationStop("not json").generated, std::nullopt);
}

TEST(WarningsTest, AGenerationThatStoppedAtEosBeforeMaxTokensIsFlaggedWithItsReason) {
  RunExtent run{4, 4, {"eos", 4}};
  const std::vector<Warning> w = RunWarnings(Generate(64), "baseline run", run);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, "generation_short");
  EXPECT_EQ(w[0].message, "baseline run stopped (eos) after 4 of 64 requested tokens");
}

TEST(WarningsTest, WithoutAStopReasonTheCountDecides) {
  const std::vector<Warning> w = RunWarnings(Generate(64), "cell run", RunExtent{6, 6, {}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].message,
            "cell run generated 6 of 64 requested tokens (its driver gave no "
            "stop reason)");
  EXPECT_TRUE(RunWarnings(Generate(64), "cell run", RunExtent{64, 64, {}}).empty());
}

TEST(WarningsTest, AStopAtMaxTokensIsNotFlagged) {
  EXPECT_FALSE(GenerationShort(RunExtent{64, 64, {"max_tokens", 64}}, 64));
  EXPECT_TRUE(GenerationShort(RunExtent{64, 64, {"eos", 10}}, 64));  // the driver's count wins
}

TEST(WarningsTest, ComparingFewerPositionsThanRequestedIsFlaggedWithBothLengths) {
  digest::StreamSummary s;
  s.reference_length = 120;
  s.other_length = 125;
  s.compared = 120;
  std::optional<Warning> w = ComparedWarning(TeacherForced(128), s);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->kind, "positions_short");
  EXPECT_EQ(w->message,
            "compared 120 of 128 requested positions (baseline run: 120, cell run: 125)");
  s.compared = 128;
  EXPECT_FALSE(ComparedWarning(TeacherForced(128), s).has_value());
  EXPECT_FALSE(ComparedWarning(PlannedWorkload(), digest::StreamSummary()).has_value());
}

std::vector<digest::PositionRecord> Stream(std::uint64_t n, bool generate) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto top = static_cast<std::int32_t>(i % testing::kVocab);
    out.push_back(MakeRecord(i, TwoPeakRow(top, (top + 1) % testing::kVocab, 2.0),
                             generate ? digest::kNoTarget : top, /*full=*/false,
                             generate ? top : -1));
  }
  return out;
}

const std::vector<Warning>& WarningsOf(const Report& r, const std::string& workload,
                                       const std::string& label) {
  for (const WorkloadReport& w : r.workloads) {
    if (w.workload.name != workload) continue;
    if (label == "baseline") return w.baseline.warnings;
    for (const CellReport& c : w.cells) {
      if (c.cell.label == label) return c.warnings;
    }
  }
  ADD_FAILURE() << "no " << label << " in " << workload;
  static const std::vector<Warning> kNone;
  return kNone;
}

// The numbers of the example that motivated this: 128 positions requested, 120 stored on
// both sides; a baseline generation that stopped at EOS after 4 of 64 tokens.
TEST(ReportWarningsTest, TheReportFlagsShortComparisonsAndEarlyStopsOnBothSides) {
  auto store = store::MakeMemoryStore();
  testing::ExperimentBuilder plan("short");
  plan.Workload("wiki", "teacher_forced", 128).Workload("gen", "generate", 64);
  plan.Cell("baseline").Cell("quant=q8_0");
  const std::string b = plan.Job("baseline", "wiki", 0), q = plan.Job("quant=q8_0", "wiki", 0);
  const std::string gb = plan.Job("baseline", "gen", 0), gq = plan.Job("quant=q8_0", "gen", 0);
  plan.Submit(*store);
  testing::AddSucceededRun(*store, b, "run-b", Stream(120, false));
  testing::AddSucceededRun(*store, q, "run-q", Stream(120, false));
  testing::AddSucceededRunWithSummary(*store, gb, "run-gb", Stream(4, true),
                                      R"({"done": {"stop": "eos", "generated_tokens": 4}})");
  testing::AddSucceededRunWithSummary(
      *store, gq, "run-gq", Stream(64, true),
      R"({"done": {"stop": "max_tokens", "generated_tokens": 64}})");
  Result<ExperimentInput> input = LoadExperiment(*store, "short");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  const auto& baseline = WarningsOf(*report, "wiki", "baseline");
  ASSERT_EQ(baseline.size(), 1u);
  EXPECT_EQ(baseline[0].message, "baseline run holds 120 of 128 requested positions");
  const auto& quant = WarningsOf(*report, "wiki", "quant=q8_0");
  ASSERT_EQ(quant.size(), 1u);
  EXPECT_EQ(quant[0].message,
            "compared 120 of 128 requested positions (baseline run: 120, cell run: 120)");
  const auto& gen = WarningsOf(*report, "gen", "quant=q8_0");
  ASSERT_EQ(gen.size(), 1u);  // the cell ran to max_tokens; its baseline did not
  EXPECT_EQ(gen[0].message, "baseline run stopped (eos) after 4 of 64 requested tokens");
  EXPECT_EQ(WarningsOf(*report, "gen", "baseline").size(), 1u);
}

}  // namespace
}  // namespace orch::report
