// `orch store backup` / `restore` underneath: a backup taken while the store is held
// open restores to a store with every acknowledged record; restore never overwrites.
#include "store/store_backup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/rocksdb_store.h"
#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

TEST(StoreBackupTest, ABackupTakenWhileTheStoreIsOpenRestoresEverythingAcknowledged) {
  TempDir dir;
  std::string path = (dir.path() / "data" / "rocksdb").string();
  std::unique_ptr<Store> primary = std::move(OpenRocksDbStore(path, RocksDbOptions{})).value();
  std::vector<JobRecord> jobs;
  for (int i = 0; i < 60; ++i) {
    JobRecord job;
    job.id = "job-" + std::to_string(i);
    job.experiment = "exp";
    jobs.push_back(job);
  }
  ASSERT_TRUE(primary->PutPlan({"exp", "{}"}, jobs).ok());

  std::string backups = (dir.path() / "backups").string();
  Result<BackupSummary> taken =
      BackupRocksDbStore(path, backups, (dir.path() / "scratch").string());
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(taken->id, 1u);
  EXPECT_GT(taken->files, 0u);
  ASSERT_TRUE(primary->PutPlan({"exp", "{}"}, {}).ok()) << "the coordinator keeps writing";

  std::string restored = (dir.path() / "restored" / "rocksdb").string();
  Status status = RestoreRocksDbStore(backups, restored);
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::unique_ptr<Store> store = std::move(OpenRocksDbStore(restored, RocksDbOptions{})).value();
  EXPECT_EQ(store->ListJobs("exp")->size(), 60u);
}

TEST(StoreBackupTest, RestoreRefusesANonEmptyDestinationAndChangesNothing) {
  TempDir dir;
  std::string path = (dir.path() / "rocksdb").string();
  {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path, RocksDbOptions{})).value();
    ASSERT_TRUE(store->PutPlan({"exp", "{}"}, {}).ok());
  }
  std::string backups = (dir.path() / "backups").string();
  ASSERT_TRUE(BackupRocksDbStore(path, backups, (dir.path() / "scratch").string()).ok());
  std::filesystem::create_directories(dir.path() / "busy");
  std::ofstream(dir.path() / "busy" / "keep") << "x";
  Status status = RestoreRocksDbStore(backups, (dir.path() / "busy").string());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("Move it aside"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "busy" / "keep"));
}

TEST(StoreBackupTest, BackingUpAMissingStoreIsNotFound) {
  TempDir dir;
  EXPECT_EQ(BackupRocksDbStore((dir.path() / "none").string(), (dir.path() / "b").string(),
                               (dir.path() / "s").string())
                .status()
                .code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace orch::store
