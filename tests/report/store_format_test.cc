// A record written by a newer orch names itself and fails only its own experiment's
// report; other experiments of the same store still report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "report/render.h"
#include "report/report.h"
#include "report/run_source.h"
#include "store/memory_store.h"
#include "store/rocksdb_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using ::testing::HasSubstr;

// Version 9: the fields every version starts with (run id, job id), then unknown ones.
std::string NewerRun(const std::string& id, const std::string& job_id) {
  return std::string(1, '\x09') + static_cast<char>(id.size()) + id +
         static_cast<char>(job_id.size()) + job_id + "fields of a later orch";
}

std::string StandardJsonFromAMemoryStore() {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "standard");
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  return RenderJson(*BuildReport(*input, *source, {}));
}

TEST(StoreFormatTest, ARunOfANewerOrchFailsOnlyItsOwnExperimentsReport) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-report-format-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    std::unique_ptr<store::Store> store = std::move(store::OpenRocksDbStore(dir, {})).value();
    testing::BuildStandardExperiment(*store);
    store::JobRecord job;
    job.id = "later-job";
    job.experiment = "later";
    ASSERT_TRUE(store->PutPlan({"later", "{}"}, {job}).ok());
    store::RunRecord run;
    run.id = "later-run";
    run.job_id = "later-job";
    ASSERT_TRUE(store->Apply({.job = std::nullopt, .run = run, .events = {}}).ok());
  }
  ASSERT_TRUE(
      store::WriteRawValueForTesting(dir, "runs", "later-run", NewerRun("later-run", "later-job"))
          .ok());
  std::unique_ptr<store::Store> store = std::move(store::OpenRocksDbStore(dir, {})).value();

  Result<ExperimentInput> standard = LoadExperiment(*store, "standard");
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*standard, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(RenderJson(*report), StandardJsonFromAMemoryStore());

  Result<ExperimentInput> later = LoadExperiment(*store, "later");
  EXPECT_EQ(later.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(later.status().message(),
              HasSubstr("runs/later-run: written by a newer orch (format version 9, this orch "
                        "reads up to 6)"));
  store.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace orch::report
