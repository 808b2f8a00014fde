// A damaged store directory is refused, loudly and without changing it: a missing
// CURRENT, overwritten WAL bytes, a truncated WAL. Never an empty or rolled-back store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/rocksdb_store.h"
#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A store at DIR/rocksdb holding one experiment of `jobs` jobs, all in the WAL.
class DamagedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
    std::vector<JobRecord> jobs;
    for (int i = 0; i < kJobs; ++i) {
      JobRecord job;
      job.id = "job-" + std::to_string(i);
      job.experiment = "exp";
      ASSERT_TRUE(store->PutPlan({"exp", "{}"}, {job}).ok());
    }
  }

  std::string path() const { return (dir_.path() / "rocksdb").string(); }
  fs::path Wal() const {
    for (const auto& entry : fs::directory_iterator(path())) {
      if (entry.path().extension() == ".log" && fs::file_size(entry.path()) > 0)
        return entry.path();
    }
    ADD_FAILURE() << "no WAL in " << path();
    return {};
  }
  Result<std::unique_ptr<Store>> Open() { return OpenRocksDbStore(path(), RocksDbOptions{}); }

  static constexpr int kJobs = 60;
  TempDir dir_;
};

std::string ReadAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(DamagedStoreTest, RefusesToCreateADatabaseOverFilesWithoutCurrent) {
  {
    std::unique_ptr<Store> store = std::move(Open()).value();  // flushes nothing: data in WAL
  }
  fs::remove(fs::path(path()) / "CURRENT");
  std::set<std::string> before;
  for (const auto& entry : fs::directory_iterator(path())) before.insert(entry.path().filename());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<std::unique_ptr<Store>> store = Open();
    ASSERT_FALSE(store.ok()) << "attempt " << attempt << " opened a store";
    EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(store.status().message(), HasSubstr(path()));
    EXPECT_THAT(store.status().message(), HasSubstr("no CURRENT"));
    EXPECT_THAT(store.status().message(), HasSubstr("orch store check " + dir_.path().string()));
    EXPECT_THAT(store.status().message(), HasSubstr("orch store restore"));
  }
  std::set<std::string> after;
  for (const auto& entry : fs::directory_iterator(path())) after.insert(entry.path().filename());
  EXPECT_EQ(after, before) << "nothing created, nothing deleted";
}

TEST_F(DamagedStoreTest, RefusesAWalWithOverwrittenBytesAndLeavesItAsItIs) {
  fs::path wal = Wal();
  std::string intact = ReadAll(wal);
  ASSERT_GT(intact.size(), 1000u);
  std::string damaged = intact;
  for (size_t i = intact.size() / 2; i < intact.size() / 2 + 200; ++i) damaged[i] = 'X';
  WriteAll(wal, damaged);

  Result<std::unique_ptr<Store>> store = Open();
  ASSERT_FALSE(store.ok()) << "opened a store without the jobs after the damage";
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("damaged"));
  EXPECT_THAT(store.status().message(), HasSubstr("orch store check"));
  EXPECT_EQ(ReadAll(wal), damaged) << "the refused open changed the WAL";

  WriteAll(wal, intact);
  Result<std::unique_ptr<Store>> repaired = Open();
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ((*repaired)->ListJobs("exp")->size(), static_cast<size_t>(kJobs));
}

TEST_F(DamagedStoreTest, RefusesATruncatedWalInsteadOfRollingBack) {
  fs::path wal = Wal();
  std::string intact = ReadAll(wal);
  fs::resize_file(wal, intact.size() / 2 + 3);  // inside a record

  Result<std::unique_ptr<Store>> store = Open();
  ASSERT_FALSE(store.ok()) << "rolled back to " << (*store)->ListJobs("exp")->size() << " of "
                           << kJobs << " jobs";
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr(path()));

  WriteAll(wal, intact);
  Result<std::unique_ptr<Store>> repaired = Open();
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ((*repaired)->ListJobs("exp")->size(), static_cast<size_t>(kJobs));
}

// A write cut off by the death of its process: RocksDB writes a record larger than its
// buffer in several system calls, and a kill between them leaves the newest WAL ending
// inside that record. A caller that reports what was dropped (the coordinator, orch
// import) opens the store without it; every other damage is still refused.
TEST_F(DamagedStoreTest, ALastRecordCutOffByTheEndOfTheNewestWalIsDroppedAndReported) {
  fs::path wal;
  {
    std::unique_ptr<Store> store = std::move(Open()).value();  // the 60 jobs leave the WAL
    JobRecord big;
    big.id = "big-job";
    big.experiment = "big";
    ASSERT_TRUE(store->PutPlan({"big", std::string(300000, 'x')}, {big}).ok());
    for (const auto& entry : fs::directory_iterator(path())) {  // the newest WAL
      if (entry.path().extension() == ".log" && entry.path().filename() > wal.filename())
        wal = entry.path();
    }
    ASSERT_GT(fs::file_size(wal), 300000u);
  }
  fs::resize_file(wal, fs::file_size(wal) - 100000);  // inside the big record

  Result<std::unique_ptr<Store>> strict = Open();
  ASSERT_FALSE(strict.ok()) << "an open that reports nothing dropped it silently";
  EXPECT_EQ(strict.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(strict.status().message(), HasSubstr("ends inside its last record"));
  EXPECT_THAT(strict.status().message(), HasSubstr("`orch coordinator` and `orch import` open"));

  std::vector<std::string> dropped;
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore(path(), {.dropped = &dropped});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->ListJobs("exp")->size(), static_cast<size_t>(kJobs));
  EXPECT_TRUE((*store)->ListJobs("big")->empty());
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_THAT(dropped[0], HasSubstr(wal.filename().string() + " ends inside its last record"));
  EXPECT_THAT(dropped[0], HasSubstr("never acknowledged"));
}

TEST_F(DamagedStoreTest, DamageBeforeTheEndIsRefusedEvenWhereACutOffRecordWouldBeDropped) {
  fs::path wal = Wal();
  std::string damaged = ReadAll(wal);
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 200; ++i) damaged[i] = 'X';
  WriteAll(wal, damaged);
  std::vector<std::string> dropped;
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore(path(), {.dropped = &dropped});
  ASSERT_FALSE(store.ok()) << (dropped.empty() ? "" : dropped[0]);
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(ReadAll(wal), damaged) << "the refused open changed the WAL";
}

}  // namespace
}  // namespace orch::store
