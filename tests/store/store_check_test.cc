// `orch store check` underneath: a sound store checks clean; damaged records are found
// and attributed to their experiment; damage that keeps the store from opening is
// reported, not hidden.
#include "store/store_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/rocksdb_store.h"
#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

using ::testing::HasSubstr;

class StoreCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
    for (std::string exp : {"alpha", "beta"}) {
      JobRecord job;
      job.id = exp + "-job";
      job.experiment = exp;
      ASSERT_TRUE(store->PutPlan({exp, "{}"}, {job}).ok());
      RunRecord run;
      run.id = exp + "-run";
      run.job_id = job.id;
      ASSERT_TRUE(store->Apply({.job = std::nullopt, .run = run, .events = {}}).ok());
      ASSERT_TRUE(store->AppendChunk(run.id, 0, {{0, "digest"}}).ok());
    }
  }
  std::string path() const { return (dir_.path() / "rocksdb").string(); }

  TempDir dir_;
};

TEST_F(StoreCheckTest, ASoundStoreChecksClean) {
  Result<StoreCheckReport> report = CheckRocksDbStore(path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok());
  EXPECT_GT(report->records, 10u);
}

TEST_F(StoreCheckTest, FindsUndecodableRecordsAndNamesTheirExperiment) {
  ASSERT_TRUE(WriteRawValueForTesting(path(), "jobs", "beta-job", std::string("\x01\x05", 2)).ok());
  ASSERT_TRUE(WriteRawValueForTesting(path(), "runs", "beta-run",
                                      std::string("\x09\x08"
                                                  "beta-run\x08"
                                                  "beta-job"
                                                  "new"))
                  .ok());
  Result<StoreCheckReport> report = CheckRocksDbStore(path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->problems.size(), 2u);
  EXPECT_EQ(report->problems[0].experiment, "beta") << "known from the plan_jobs index";
  EXPECT_EQ(report->problems[0].where, "jobs/beta-job");
  EXPECT_EQ(report->problems[1].experiment, "beta");
  EXPECT_THAT(report->problems[1].what, HasSubstr("written by a newer orch (format version 9"));
}

TEST_F(StoreCheckTest, ReportsAWalDamageThatKeepsTheStoreFromOpening) {
  std::filesystem::path wal;
  for (const auto& entry : std::filesystem::directory_iterator(path())) {
    if (entry.path().extension() == ".log" && std::filesystem::file_size(entry.path()) > 0) {
      wal = entry.path();
    }
  }
  ASSERT_FALSE(wal.empty());
  std::filesystem::resize_file(wal, std::filesystem::file_size(wal) - 5);
  Result<StoreCheckReport> report = CheckRocksDbStore(path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_FALSE(report->ok());
  EXPECT_EQ(report->problems[0].where, "open");
  EXPECT_THAT(report->problems[0].what, HasSubstr("damaged"));
}

TEST_F(StoreCheckTest, FindsACorruptBlockOfAnSstFile) {
  {
    // Reopening flushes the WAL into SST files.
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
  }
  std::filesystem::path sst;
  for (const auto& entry : std::filesystem::directory_iterator(path())) {
    if (entry.path().extension() == ".sst") sst = entry.path();
  }
  ASSERT_FALSE(sst.empty());
  std::fstream file(sst, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(10);
  file.write("XXXXXXXX", 8);
  file.close();
  Result<StoreCheckReport> report = CheckRocksDbStore(path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_FALSE(report->ok());
  EXPECT_THAT(report->problems[0].what, HasSubstr(sst.filename().string()));
}

TEST_F(StoreCheckTest, NoStoreIsNotFound) {
  EXPECT_EQ(CheckRocksDbStore((dir_.path() / "none").string()).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace orch::store
