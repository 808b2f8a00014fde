// The bisection section of a report (report/bisect_report.h) on hand-made runs: a plan of
// two differing axes whose rows change with one of them only.
#include "report/bisect_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/bisect_render.h"
#include "report/render.h"
#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using ::testing::HasSubstr;

constexpr int kPositions = 10;

// quant moves every row (its top-1 margin), threads nothing.
std::vector<digest::PositionRecord> Rows(bool quant) {
  std::vector<digest::PositionRecord> out;
  for (int i = 0; i < kPositions; ++i) {
    out.push_back(testing::MakeRecord(i, testing::TwoPeakRow(i % 8, (i + 1) % 8, quant ? 0.5 : 2.0),
                                      (i + 2) % 8, /*full=*/true));
  }
  return out;
}

// from, to, from + quant, from + threads (= to - quant), each cell of set `quant`'s rows.
void BuildBisection(store::Store& store, bool to_finished) {
  testing::ExperimentBuilder b("bis");
  b.Workload("w", "teacher_forced", kPositions)
      .Baseline("quant", "f32")
      .Baseline("threads", "1")
      .Bisect(R"({"axes": ["quant", "threads"], "tolerance": 0.05, "max_rounds": 4})")
      .Cell("from")
      .Combination("to", R"({"quant": "q8_0", "threads": 2})")
      .Combination("from + quant", R"({"quant": "q8_0"})")
      .Combination("from + threads", R"({"threads": 2})");
  std::vector<std::pair<std::string, bool>> runs = {
      {b.Job("from", "w", 0), false},        {b.Job("from", "w", 1), false},
      {b.Job("to", "w", 0), true},           {b.Job("to", "w", 1), true},
      {b.Job("from + quant", "w", 0), true}, {b.Job("from + threads", "w", 0), false}};
  b.Submit(store);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!to_finished && (i == 2 || i == 3)) continue;
    testing::AddSucceededRun(store, runs[i].first, "run-" + std::to_string(i),
                             Rows(runs[i].second));
  }
}

Result<Report> ReportOf(store::Store& store) {
  ORCH_ASSIGN_OR_RETURN(ExperimentInput input, LoadExperiment(store, "bis"));
  std::unique_ptr<RunSource> source = MakeStoreRunSource(store);
  return BuildReport(input, *source, {});
}

TEST(BisectReportTest, EveryCellIsMeasuredAgainstBothEndsAndTheAxisThatMovesExplainsIt) {
  auto store = store::MakeMemoryStore();
  BuildBisection(*store, true);
  Result<Report> report = ReportOf(*store);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->bisect.has_value());
  const BisectReport& b = *report->bisect;
  ASSERT_EQ(b.cells.size(), 4u);
  EXPECT_EQ(b.cells[1].label, "to");
  EXPECT_EQ(b.cells[1].set, 3u);
  double kld = 0;
  for (int i = 0; i < kPositions; ++i) {
    kld += testing::ReferenceKld(testing::TwoPeakRow(i % 8, (i + 1) % 8, 2.0),
                                 testing::TwoPeakRow(i % 8, (i + 1) % 8, 0.5));
  }
  kld /= kPositions;
  ASSERT_TRUE(b.cells[1].measure.from.has_value());
  EXPECT_NEAR(b.cells[1].measure.from->kld, kld, 1e-9);
  EXPECT_EQ(b.cells[1].measure.from->positions, 10u);
  EXPECT_EQ(b.cells[1].measure.from->exact_positions, 10u);
  EXPECT_FALSE(b.cells[1].measure.to.has_value()) << "to against itself is not measured";
  EXPECT_EQ(b.cells[0].measure.noise, 0.0) << "from's two repeats are bit-identical";
  EXPECT_FALSE(b.cells[2].measure.noise.has_value()) << "one repeat: no noise of its own";
  EXPECT_DOUBLE_EQ(b.cells[2].measure.to->kld, 0.0);
  EXPECT_TRUE(b.cells[2].measure.to->identical);
  EXPECT_EQ(b.verdict.kind, bisect::VerdictKind::kExplained);
  EXPECT_EQ(b.verdict.explaining, 1u);
  EXPECT_NEAR(b.verdict.total, kld, 1e-9);

  std::string text = RenderText(*report, testing::kUnwrapped);
  EXPECT_THAT(text, HasSubstr("== bisection =="));
  EXPECT_THAT(text, HasSubstr("bisection: quant explains the divergence: from + quant matches to "
                              "within 0 and from + threads matches from within 0"));
  EXPECT_THAT(RenderJson(*report), HasSubstr(R"("explaining": [
      "quant"
    ])"));
  // The combinations are no one axis's cells: nothing is ranked by axis.
  EXPECT_TRUE(report->by_kld.empty());
}

TEST(BisectReportTest, AnEndWithoutAFinishedRunLeavesItUnmeasuredAndSaysWhy) {
  auto store = store::MakeMemoryStore();
  BuildBisection(*store, false);
  Result<Report> report = ReportOf(*store);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const BisectReport& b = *report->bisect;
  EXPECT_EQ(b.verdict.kind, bisect::VerdictKind::kUnmeasured);
  EXPECT_EQ(b.cells[1].missing, "no finished run of workload w");
  EXPECT_EQ(b.cells[2].missing, "to has no finished run of workload w");
  ASSERT_TRUE(b.cells[2].measure.from.has_value()) << "the other end is still measured";
  EXPECT_FALSE(b.cells[2].measure.to.has_value());
  EXPECT_THAT(RenderText(*report, testing::kUnwrapped),
              HasSubstr("bisection: not measured yet: KLD(to, from) needs finished runs of both "
                        "(cell to: no finished run of workload w)"));
}

// Task workloads: each cell's outcomes against from, from first and then the bisection's
// cells in plan order; to's in words beside the verdict, every cell in the table and JSON.
TEST(BisectTaskOutcomesTest, EachCellsOutcomesAgainstFromAreShownFromFirst) {
  BisectReport bisect;
  bisect.plan.axes = {"quant", "kv"};
  for (const auto& [label, set] : std::vector<std::pair<std::string, bisect::AxisSet>>{
           {"from", 0}, {"to", 3}, {"from + quant", 1}}) {
    bisect.cells.push_back({label, set, 1, {}, ""});
  }
  auto cell = [](const std::string& label, std::uint64_t passes, std::uint64_t trials,
                 std::uint64_t changed, std::uint64_t near_tie, std::uint64_t broken) {
    TaskCellReport c;
    c.cell.label = label;
    c.cases = c.cases_planned = 10;
    c.passes = passes;
    c.trials = trials;
    c.pass_rate = {static_cast<double>(passes) / trials, trials, {0.5, 0.9, "Wilson"}};
    c.changed = changed;
    c.near_tie = near_tie;
    c.broken = broken;
    return c;
  };
  TaskWorkloadReport task;
  task.name = "triage";
  task.baseline = cell("baseline", 16, 20, 0, 0, 0);
  // In plan order of the task report, which need not be the bisection's.
  task.cells = {cell("from + quant", 7, 10, 1, 1, 1), cell("to", 6, 10, 2, 1, 2),
                cell("not a bisection cell", 0, 10, 9, 0, 9)};
  TaskWorkloadReport broken;
  broken.name = "unreadable";
  broken.error = "its cases are unknown";
  AddTaskOutcomes(bisect, {task, broken});

  ASSERT_EQ(bisect.tasks.size(), 3u);
  EXPECT_EQ(bisect.tasks[0].cell, "from");
  EXPECT_EQ(bisect.tasks[1].cell, "to");
  EXPECT_EQ(bisect.tasks[2].cell, "from + quant");
  EXPECT_EQ(bisect.tasks[1].changed, 2u);
  EXPECT_EQ(bisect.tasks[1].broken, 2u);

  std::string lines;
  for (const std::string& line : BisectVerdictLines(bisect)) lines += line + "\n";
  EXPECT_THAT(lines, HasSubstr("task triage: from passes 80.00% [50.00%, 90.00%] n=20, to "
                               "60.00% [50.00%, 90.00%] n=10; 2 of 10 cases change outcome "
                               "from from to to (1 after a near-tie; 2 broken, 0 fixed)"));
  Table table = BisectTaskTable(bisect);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0],
            (std::vector<std::string>{"from", "triage", "80.00% [50.00%, 90.00%] n=20", "-", "-",
                                      "-", "-"}));
  EXPECT_EQ(table.rows[2][3], "1");
  nlohmann::ordered_json json = BisectJson(bisect);
  ASSERT_EQ(json["tasks"].size(), 3u);
  EXPECT_TRUE(json["tasks"][0]["changed"].is_null());
  EXPECT_EQ(json["tasks"][1]["changed"], 2);
  EXPECT_EQ(json["tasks"][1]["pass_rate_n"], 10);
  EXPECT_EQ(json["tasks"][1]["pass_rate_ci95"], nlohmann::ordered_json({0.5, 0.9}));
}

}  // namespace
}  // namespace orch::report
