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

}  // namespace
}  // namespace orch::store
