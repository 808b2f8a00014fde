// Task outcomes (report/task_report.h) on the "tasks" experiment of
// tests/report/task_fixture.h: cases built to depart from the baseline at known tokens
// with known margins.
#include "report/task_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/render.h"
#include "report/task_tables.h"
#include "store/memory_store.h"
#include "store/rocksdb_store.h"
#include "tests/report/report_fixture.h"
#include "tests/report/task_fixture.h"

namespace orch::report {
namespace {

using testing::TaskFixtureLogProb;

Report TaskReportOf(store::Store& store) {
  testing::TaskFixtureCatalog catalog;
  Result<ExperimentInput> input = LoadExperiment(store, "tasks");
  EXPECT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(store);
  ReportOptions options;
  options.tasks = &catalog;
  Result<Report> report = BuildReport(*input, *source, options);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return std::move(report).value();
}

Report TaskReport() {
  auto store = store::MakeMemoryStore();
  testing::BuildTaskExperiment(*store);
  return TaskReportOf(*store);
}

const TaskWorkloadReport& TaskOf(const Report& r, const std::string& name) {
  for (const TaskWorkloadReport& t : r.tasks) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no task " << name;
  return r.tasks.front();
}

const TaskCellReport& TaskCellOf(const TaskWorkloadReport& t, const std::string& label) {
  for (const TaskCellReport& c : t.cells) {
    if (c.cell.label == label) return c;
  }
  ADD_FAILURE() << "no cell " << label;
  return t.baseline;
}

const TaskCaseOutcome& TaskCaseOf(const TaskCellReport& c, const std::string& id) {
  for (const TaskCaseOutcome& o : c.outcomes) {
    if (o.id == id) return o;
  }
  ADD_FAILURE() << "no case " << id;
  return c.outcomes.front();
}

TEST(TaskReportTest, PerCaseWorkloadsAreReportedAsTasksNotAsWorkloads) {
  const Report r = TaskReport();
  EXPECT_TRUE(r.workloads.empty());
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].name, "triage");
  EXPECT_FALSE(r.tasks[0].multiple_choice);
  EXPECT_EQ(r.tasks[1].name, "pick");
  EXPECT_TRUE(r.tasks[1].multiple_choice);
  ASSERT_EQ(r.tasks[0].cells.size(), 2u);
  EXPECT_EQ(r.tasks[0].cells[0].cell.label, "kv=q4_0");
}

TEST(TaskReportTest, PostMortemOfANearTieDepartureAtAKnownToken) {
  const Report r = TaskReport();
  const TaskCaseOutcome& c2 = TaskCaseOf(TaskCellOf(TaskOf(r, "triage"), "kv=q4_0"), "c2");
  EXPECT_TRUE(c2.changed);
  EXPECT_FALSE(c2.baseline_unstable);
  EXPECT_FALSE(c2.pass());
  ASSERT_TRUE(c2.post_mortem.has_value());
  const TaskPostMortem& p = *c2.post_mortem;
  EXPECT_EQ(p.index, 2u);
  EXPECT_EQ(p.position, testing::kFirstGenerated + 2);
  EXPECT_EQ(p.baseline_token, 3);
  EXPECT_EQ(p.baseline_text, "d");
  EXPECT_EQ(p.cell_token, 5);
  EXPECT_EQ(p.cell_text, "f");
  EXPECT_EQ(p.context, (std::vector<std::int32_t>{1, 2}));
  EXPECT_NEAR(p.baseline_margin, testing::kC2BaselineMargin, 1e-6);
  EXPECT_NEAR(p.cell_margin, testing::kC2CellMargin, 1e-6);
  // The baseline's own repeats move the top logit by more than the margin: a near-tie.
  EXPECT_NEAR(p.noise_band, testing::kC2RepeatShift, 1e-6);
  EXPECT_TRUE(p.near_tie);
  EXPECT_EQ(c2.change, TaskChangeKind::kNearTie);
  EXPECT_EQ(c2.runs.front().reason, "exact: expected \"bcde\", got \"bcfe\"");
}

TEST(TaskReportTest, PostMortemOfARealMarginDeparture) {
  const Report r = TaskReport();
  const TaskCaseOutcome& c3 = TaskCaseOf(TaskCellOf(TaskOf(r, "triage"), "quant=q8_0"), "c3");
  ASSERT_TRUE(c3.post_mortem.has_value());
  const TaskPostMortem& p = *c3.post_mortem;
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(p.baseline_token, 6);
  EXPECT_EQ(p.cell_token, 7);
  EXPECT_NEAR(p.baseline_margin, testing::kC3BaselineMargin, 1e-6);
  EXPECT_NEAR(p.cell_margin, testing::kC3CellMargin, 1e-6);
  // No repeat noise; the cell's mean |dlogit at top-1| over the two shared positions is
  // half the drop of the baseline's top token: below the margin.
  EXPECT_NEAR(p.noise_band, (1.0 + testing::kC3BaselineMargin - 1.0) / 2, 1e-6);
  EXPECT_FALSE(p.near_tie);
  EXPECT_EQ(c3.change, TaskChangeKind::kRealMargin);
}

TEST(TaskReportTest, CountsNearTieAndRealMarginChangesApart) {
  const Report r = TaskReport();
  const TaskCellReport& kv = TaskCellOf(TaskOf(r, "triage"), "kv=q4_0");
  EXPECT_EQ(kv.changed, 1u);  // c2; c4 is unstable in the baseline
  EXPECT_EQ(kv.near_tie, 1u);
  EXPECT_EQ(kv.real_margin, 0u);
  EXPECT_EQ(kv.broken, 1u);
  const TaskCellReport& quant = TaskCellOf(TaskOf(r, "triage"), "quant=q8_0");
  EXPECT_EQ(quant.changed, 2u);  // c3 broken, c5 fixed
  EXPECT_EQ(quant.real_margin, 2u);
  EXPECT_EQ(quant.near_tie, 0u);
  EXPECT_EQ(quant.broken, 1u);
  EXPECT_EQ(quant.fixed, 1u);
  EXPECT_EQ(quant.unstable, 0u);
}

TEST(TaskReportTest, PassRateOverEveryRepeatWithAWilsonInterval) {
  const Report r = TaskReport();
  const TaskWorkloadReport& triage = TaskOf(r, "triage");
  // Baseline: c1, c2, c3 pass twice, c4 once (its repeat 1 differs), c5 never.
  EXPECT_EQ(triage.baseline.cases, 5);
  EXPECT_EQ(triage.baseline.repeats, 2);
  EXPECT_EQ(triage.baseline.trials, 10u);
  EXPECT_EQ(triage.baseline.passes, 7u);
  const Interval expected = WilsonInterval(7, 10);
  EXPECT_DOUBLE_EQ(triage.baseline.pass_rate.mean, 0.7);
  EXPECT_DOUBLE_EQ(triage.baseline.pass_rate.ci95.lo, expected.lo);
  EXPECT_DOUBLE_EQ(triage.baseline.pass_rate.ci95.hi, expected.hi);
  EXPECT_LT(expected.lo, 0.7);
  EXPECT_GT(expected.hi, 0.7);
  const TaskCellReport& kv = TaskCellOf(triage, "kv=q4_0");
  EXPECT_EQ(kv.trials, 5u);
  EXPECT_EQ(kv.passes, 2u);  // c1, c3
  EXPECT_DOUBLE_EQ(kv.pass_rate.ci95.lo, WilsonInterval(2, 5).lo);
}

TEST(TaskReportTest, ACaseTheBaselineFlipsOnIsReportedApart) {
  const Report r = TaskReport();
  const TaskWorkloadReport& triage = TaskOf(r, "triage");
  const TaskCaseOutcome& c4 = TaskCaseOf(TaskCellOf(triage, "kv=q4_0"), "c4");
  EXPECT_TRUE(c4.changed);
  EXPECT_TRUE(c4.baseline_unstable);
  EXPECT_FALSE(c4.post_mortem.has_value());
  EXPECT_EQ(TaskCellOf(triage, "kv=q4_0").unstable, 1u);
  const Table changes = TaskChangeTable(triage);
  for (const auto& row : changes.rows) EXPECT_NE(row[1], "c4");
  const Table unstable = TaskUnstableTable(triage);
  ASSERT_EQ(unstable.rows.size(), 1u);
  EXPECT_EQ(unstable.rows[0][1], "c4");
  EXPECT_EQ(unstable.rows[0][2], "1 / 2");
}

TEST(TaskReportTest, MultipleChoicePicksByContinuationLogLikelihood) {
  const Report r = TaskReport();
  const TaskWorkloadReport& pick = TaskOf(r, "pick");
  const TaskCaseOutcome& base = TaskCaseOf(pick.baseline, "q1");
  ASSERT_TRUE(base.has_outcome());
  EXPECT_EQ(base.runs.front().chosen, 0);
  EXPECT_TRUE(base.pass());
  auto loglik = [](double logit) { return 2 * TaskFixtureLogProb(logit); };  // two tokens
  EXPECT_NEAR(base.runs.front().logliks[0], loglik(3), 1e-5);
  EXPECT_NEAR(base.runs.front().choice_margin, loglik(3) - loglik(1), 1e-5);
  const TaskCellReport& quant = TaskCellOf(pick, "quant=q8_0");
  const TaskCaseOutcome& q1 = TaskCaseOf(quant, "q1");
  EXPECT_EQ(q1.runs.front().chosen, 1);
  EXPECT_TRUE(q1.changed);
  EXPECT_NEAR(q1.runs.front().choice_margin, loglik(3.5) - loglik(1), 1e-5);
  // The band: the cell's mean |dloglik| over every choice of every case.
  const double moved = (std::fabs(loglik(1) - loglik(3)) + std::fabs(loglik(3.5) - loglik(1)) +
                        2 * std::fabs(loglik(2) - loglik(2.05))) /
                       6;
  EXPECT_NEAR(q1.choice_noise_band, moved, 1e-5);
  EXPECT_EQ(q1.change, TaskChangeKind::kRealMargin);
  EXPECT_EQ(TaskCaseOf(quant, "q3").change, TaskChangeKind::kNearTie);
  EXPECT_EQ(quant.choice_changes, 2u);
  EXPECT_EQ(quant.changed, 2u);
  EXPECT_EQ(TaskCellOf(pick, "kv=q4_0").changed, 0u);
}

TEST(TaskReportTest, AttributionRanksAxesByOutcomeChanges) {
  const Report r = TaskReport();
  ASSERT_EQ(r.by_outcome_changes.size(), 2u);
  EXPECT_EQ(r.by_outcome_changes[0].axis, "quant");
  EXPECT_EQ(r.by_outcome_changes[0].changed, 2u);
  EXPECT_EQ(r.by_outcome_changes[1].axis, "kv");
  EXPECT_EQ(r.by_outcome_changes[1].changed, 1u);
  EXPECT_GT(r.by_outcome_changes[0].kld_n, 0u);
}

TEST(TaskReportTest, UnknownCasesAreAnErrorOfTheirTaskOnly) {
  class NoCases final : public TaskCatalog {
   public:
    const std::vector<TaskCaseInfo>* Cases(std::string_view) const override { return nullptr; }
    TaskVerdict Evaluate(std::string_view, std::string_view, std::string_view) const override {
      return {};
    }
  } catalog;
  auto store = store::MakeMemoryStore();
  testing::BuildTaskExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "tasks");
  ASSERT_TRUE(input.ok());
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  ReportOptions options;
  options.tasks = &catalog;
  Result<Report> report = BuildReport(*input, *source, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->tasks[0].error, "the cases of task workload triage are unknown");
  EXPECT_NE(RenderText(*report).find("error: the cases of task workload triage are unknown"),
            std::string::npos);
}

TEST(TaskReportTest, EachCellSaysWhichChatTemplateItsRunsUsed) {
  const Report r = TaskReport();
  const std::vector<std::string> triage{testing::kTriageTemplate};
  EXPECT_EQ(TaskOf(r, "triage").baseline.chat_templates, triage);
  EXPECT_EQ(TaskCellOf(TaskOf(r, "triage"), "kv=q4_0").chat_templates, triage);
  EXPECT_TRUE(TaskOf(r, "pick").baseline.chat_templates.empty());
  const Table triage_table = TaskPassRateTable(TaskOf(r, "triage"));
  EXPECT_EQ(triage_table.header[triage_table.header.size() - 2], "chat template");
  EXPECT_EQ(triage_table.rows[0][triage_table.header.size() - 2], "5e3c9a0b1d2f");
  const Table pick_table = TaskPassRateTable(TaskOf(r, "pick"));
  EXPECT_EQ(std::count(pick_table.header.begin(), pick_table.header.end(), "chat template"), 0);
}

TEST(TaskReportTest, OrdinalDistancesAreAveragedOverTheRunsThatGaveOne) {
  const Report r = TaskReport();
  const TaskWorkloadReport& triage = TaskOf(r, "triage");
  EXPECT_EQ(triage.baseline.distance_n, 2u);  // c4's two repeats: 0 and 1
  EXPECT_DOUBLE_EQ(triage.baseline.distance_mean, 0.5);
  EXPECT_DOUBLE_EQ(TaskCellOf(triage, "kv=q4_0").distance_mean, 1.0);
  EXPECT_EQ(TaskOf(r, "pick").baseline.distance_n, 0u);
  const Table table = TaskPassRateTable(triage);
  EXPECT_EQ(table.rows[0][table.header.size() - 3], "0.5000 n=2");
}

TEST(TaskReportTest, ACaseWhoseJobFailedHasNoOutcomeAndSaysWhy) {
  auto store = store::MakeMemoryStore();
  testing::BuildTaskExperiment(*store, {"quant=q8_0", "c3"});
  const Report r = TaskReportOf(*store);
  const TaskCellReport& quant = TaskCellOf(TaskOf(r, "triage"), "quant=q8_0");
  const TaskCaseOutcome& c3 = TaskCaseOf(quant, "c3");
  EXPECT_FALSE(c3.has_outcome());
  EXPECT_FALSE(c3.changed);
  EXPECT_EQ(c3.missing, "repeat 0 failed: driver exited with status 3: out of memory");
  EXPECT_EQ(quant.cases, 4);
  EXPECT_EQ(quant.trials, 4u);
  EXPECT_EQ(quant.changed, 1u);  // c5 only: c3 has no outcome to compare
  EXPECT_NE(RenderHtml(r).find("<span class=\"case none\" data-case=\"c3\""), std::string::npos);
}

std::string TaskGoldenPath(const std::string& name) {
  return std::string(ORCH_SOURCE_DIR) + "/tests/report/testdata/" + name;
}

// Compares with the golden file; ORCH_UPDATE_GOLDEN=1 rewrites it instead.
void ExpectTaskGolden(const std::string& name, const std::string& actual) {
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(TaskGoldenPath(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(TaskGoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << "missing golden " << TaskGoldenPath(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "rerun with ORCH_UPDATE_GOLDEN=1 to accept";
}

TEST(TaskReportTest, TextMatchesGolden) {
  ExpectTaskGolden("tasks.report.txt", RenderText(TaskReport()));
}
TEST(TaskReportTest, JsonMatchesGolden) {
  ExpectTaskGolden("tasks.report.json", RenderJson(TaskReport()));
}
TEST(TaskReportTest, CsvMatchesGolden) {
  ExpectTaskGolden("tasks.report.csv", RenderCsv(TaskReport()));
}
TEST(TaskReportTest, HtmlMatchesGolden) {
  ExpectTaskGolden("tasks.report.html", RenderHtml(TaskReport()));
}

TEST(TaskReportTest, HtmlStripsHighlightChangedCasesWithTheirPostMortem) {
  const std::string html = RenderHtml(TaskReport());
  EXPECT_NE(html.find("<div class=\"task-strip\" data-task=\"triage\" data-cell=\"kv=q4_0\">"),
            std::string::npos);
  EXPECT_NE(html.find("<span class=\"case fail changed\" data-case=\"c2\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"case fail unstable\" data-case=\"c4\""), std::string::npos);
  // Within the first tokens: the prompt ("case c2", whole: short), then the generated tokens.
  EXPECT_NE(html.find("token 3 after &quot;case c2bc&quot;"), std::string::npos);
}

TEST(TaskReportTest, RocksDbStoreGivesTheSameReportAsTheMemoryStore) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-task-report-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::string from_disk;
  {
    Result<std::unique_ptr<store::Store>> store = store::OpenRocksDbStore(dir.string(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    testing::BuildTaskExperiment(**store);
    from_disk = RenderJson(TaskReportOf(**store));
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(from_disk, RenderJson(TaskReport()));
}

}  // namespace
}  // namespace orch::report
