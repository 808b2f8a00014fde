// ReadTaskRun (report/task_run.h): what a task run's records and done frame give.
#include "report/task_run.h"

#include <gtest/gtest.h>

#include <cmath>

#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using testing::MakeRecord;
using testing::TwoPeakRow;

// One stored run "run-1" of a one-job experiment, with `records` and `summary`.
store::RunRecord StoreTaskRun(store::Store& store,
                              const std::vector<digest::PositionRecord>& records,
                              const std::string& summary) {
  testing::ExperimentBuilder plan("task-run");
  plan.Workload("w", "generate").Cell("baseline");
  const std::string job = plan.Job("baseline", "w", 0);
  plan.Submit(store);
  testing::AddSucceededRunWithSummary(store, job, "run-1", records, summary);
  Result<store::RunRecord> run = store.GetRun("run-1");
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return *run;
}

TEST(TaskRunTest, GeneratedTokensComeFromTheRecordsWithTheirMargins) {
  auto store = store::MakeMemoryStore();
  const store::RunRecord run =
      StoreTaskRun(*store,
                   {MakeRecord(7, TwoPeakRow(2, 3, 0.25), digest::kNoTarget, false, 2),
                    MakeRecord(8, TwoPeakRow(5, 1, 1.5), digest::kNoTarget, false, 5)},
                   R"({"done":{"generated_text":"xy","generated_ids":[2,5],)"
                   R"("token_text":{"2":"x","5":"y","3":"unused"}}})");
  Result<TaskRunData> data = ReadTaskRun(*MakeStoreRunSource(*store), run);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->generated_text, "xy");
  ASSERT_EQ(data->steps.size(), 2u);
  EXPECT_EQ(data->steps[1].position, 8u);
  EXPECT_EQ(data->steps[1].token, 5);
  EXPECT_NEAR(data->steps[0].margin, 0.25, 1e-6);
  EXPECT_NEAR(data->steps[1].margin, 1.5, 1e-6);
  EXPECT_EQ(TaskTokenText(*data, 5), "y");
  // Only the generated tokens' texts are kept.
  EXPECT_EQ(TaskTokenText(*data, 3), std::nullopt);
}

TEST(TaskRunTest, WithoutOutputTokensTheDoneFramesIdsStandWithUnknownMargins) {
  auto store = store::MakeMemoryStore();
  const store::RunRecord run =
      StoreTaskRun(*store, {MakeRecord(0, TwoPeakRow(2, 3, 0.25), digest::kNoTarget, false)},
                   R"({"done":{"generated_ids":[4,6]}})");
  Result<TaskRunData> data = ReadTaskRun(*MakeStoreRunSource(*store), run);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ(data->steps.size(), 2u);
  EXPECT_EQ(data->steps[0].token, 4);
  EXPECT_EQ(data->steps[1].token, 6);
  EXPECT_TRUE(std::isnan(data->steps[0].margin));
}

TEST(TaskRunTest, ContinuationLogLikelihoodSumsTheTargetLogProbabilities) {
  auto store = store::MakeMemoryStore();
  std::vector<digest::PositionRecord> records;
  double expected = 0.0;
  for (std::uint64_t p = 0; p < 5; ++p) {
    const auto row = TwoPeakRow(static_cast<std::int32_t>(p), 7, 0.5 * static_cast<double>(p));
    records.push_back(MakeRecord(p, row, 7, false));
    if (p >= 2 && p <= 3) expected -= testing::ReferenceNll(row, 7);
  }
  const store::RunRecord run =
      StoreTaskRun(*store, records, R"({"done":{"continuation":{"first_position":2,"tokens":2}}})");
  Result<TaskRunData> data = ReadTaskRun(*MakeStoreRunSource(*store), run);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->continuation_first, 2u);
  EXPECT_NEAR(data->loglik, expected, 1e-5);
  EXPECT_TRUE(data->loglik_note.empty());
}

TEST(TaskRunTest, AMissingContinuationPositionLeavesTheLogLikelihoodUnknownAndSaysWhy) {
  auto store = store::MakeMemoryStore();
  const store::RunRecord run =
      StoreTaskRun(*store, {MakeRecord(2, TwoPeakRow(1, 7, 0.5), 7, false)},
                   R"({"done":{"continuation":{"first_position":2,"tokens":3}}})");
  Result<TaskRunData> data = ReadTaskRun(*MakeStoreRunSource(*store), run);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_TRUE(std::isnan(data->loglik));
  EXPECT_EQ(data->loglik_note, "continuation positions 2..4: 1 of 3 stored");
}

TEST(TaskRunTest, ASummaryThatIsNotJsonSaysNothing) {
  auto store = store::MakeMemoryStore();
  const store::RunRecord run = StoreTaskRun(*store, {}, "{not json");
  Result<TaskRunData> data = ReadTaskRun(*MakeStoreRunSource(*store), run);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_TRUE(data->generated_text.empty());
  EXPECT_TRUE(data->steps.empty());
  EXPECT_FALSE(data->continuation_first.has_value());
}

}  // namespace
}  // namespace orch::report
