// What only the RocksDB store does: files on disk, one opener at a time.
#include "store/rocksdb_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

using ::testing::HasSubstr;

TEST(RocksDbStoreTest, SecondOpenOfAnOpenStoreFailsNamingThePath) {
  TempDir dir;
  std::string path = (dir.path() / "db").string();
  Result<std::unique_ptr<Store>> first = OpenRocksDbStore(path, RocksDbOptions{});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<std::unique_ptr<Store>> second = OpenRocksDbStore(path, RocksDbOptions{});
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_THAT(second.status().message(), HasSubstr(path));
}

TEST(RocksDbStoreTest, AStoreIsReadableWhileItsCoordinatorHoldsItOpen) {
  TempDir dir;
  std::string path = (dir.path() / "db").string();
  std::unique_ptr<Store> primary = std::move(OpenRocksDbStore(path, RocksDbOptions{})).value();
  JobRecord job;
  job.id = "j1";
  job.experiment = "p";
  ASSERT_TRUE(primary->PutPlan({"p", "{}"}, {job}).ok());

  Result<std::unique_ptr<Store>> reader =
      OpenRocksDbStoreForReading(path, (dir.path() / "scratch-1").string());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->GetPlan("p")->experiment, "p");
  EXPECT_EQ((*reader)->ListJobs("p")->size(), 1u);
  EXPECT_FALSE((*reader)->PutPlan({"q", "{}"}, {}).ok()) << "a reader never writes";

  job.id = "j2";
  ASSERT_TRUE(primary->PutPlan({"p", "{}"}, {job}).ok());
  Result<std::unique_ptr<Store>> later =
      OpenRocksDbStoreForReading(path, (dir.path() / "scratch-2").string());
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ((*later)->ListJobs("p")->size(), 2u) << "a new reader sees what was written since";
  EXPECT_TRUE(primary->PutPlan({"p", "{}"}, {}).ok()) << "the primary keeps writing";
}

// A store an older orch wrote has no bundles and signers tables: a reader (orch report)
// reads them as empty, and the coordinator's open adds them.
TEST(RocksDbStoreTest, AStoreWithoutTheNewerTablesIsReadAndThenGainsThem) {
  TempDir dir;
  std::string path = (dir.path() / "db").string();
  {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path, RocksDbOptions{})).value();
    JobRecord job;
    job.id = "j1";
    job.experiment = "p";
    ASSERT_TRUE(store->PutPlan({"p", "{}"}, {job}).ok());
  }
  ASSERT_TRUE(DropTableForTesting(path, "bundles").ok());
  ASSERT_TRUE(DropTableForTesting(path, "signers").ok());

  Result<std::unique_ptr<Store>> reader =
      OpenRocksDbStoreForReading(path, (dir.path() / "scratch").string());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->ListJobs("p")->size(), 1u);
  EXPECT_EQ((*reader)->GetBundle("sha").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*reader)->GetSigner("key").status().code(), StatusCode::kNotFound);
  reader->reset();

  std::unique_ptr<Store> primary = std::move(OpenRocksDbStore(path, RocksDbOptions{})).value();
  BundleImport import;
  import.bundle = {.sha256 = "sha",
                   .contributor = "carol",
                   .signer = "key",
                   .sequence = 1,
                   .experiment = "p",
                   .nonce = "n",
                   .imported_at_ms = 1,
                   .run_ids = {}};
  EXPECT_EQ(*primary->ImportBundle(import), WriteOutcome::kStored);
  EXPECT_EQ(primary->GetSigner("key")->sequence, 1u);
}

TEST(RocksDbStoreTest, ReadingAMissingStoreIsNotFound) {
  TempDir dir;
  Result<std::unique_ptr<Store>> store =
      OpenRocksDbStoreForReading((dir.path() / "none").string(), (dir.path() / "s").string());
  EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
}

TEST(RocksDbStoreTest, MissingStoreIsAnErrorWithoutCreateIfMissing) {
  TempDir dir;
  RocksDbOptions options;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore((dir.path() / "none").string(), options);
  EXPECT_FALSE(store.ok());
}

TEST(RocksDbStoreTest, PathThatIsAFileIsAnError) {
  TempDir dir;
  std::string path = (dir.path() / "file").string();
  std::ofstream(path) << "not a database";
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore(path, RocksDbOptions{});
  EXPECT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("open store"));
}

TEST(RocksDbStoreTest, UnsyncedStoreKeepsChunksAcrossACleanClose) {
  TempDir dir;
  std::string path = (dir.path() / "db").string();
  RocksDbOptions options;
  options.sync_chunks = false;
  {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path, options)).value();
    JobRecord job;
    job.id = "j";
    job.experiment = "p";
    ASSERT_TRUE(store->PutPlan({"p", "{}"}, {job}).ok());
    StateChange change;
    change.run = RunRecord{};
    change.run->id = "r";
    change.run->job_id = "j";
    ASSERT_TRUE(store->Apply(change).ok());
    ASSERT_TRUE(store->AppendChunk("r", 0, {{1, "a"}, {2, "b"}}).ok());
  }
  std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path, options)).value();
  EXPECT_EQ(store->GetRun("r")->chunks_received, 1);
}

}  // namespace
}  // namespace orch::store
