// `orch store check|backup|restore|recover` as an operator runs them: the real binary on a real
// data directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "store/rocksdb_store.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class StoreCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    std::unique_ptr<store::Store> store =
        std::move(store::OpenRocksDbStore(store::RocksDbPathInDataDir(data()), {})).value();
    store::JobRecord job;
    job.id = "exp-job";
    job.experiment = "exp";
    ASSERT_TRUE(store->PutPlan({"exp", "{}"}, {job}).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string data() const { return (dir_ / "data").string(); }

  fs::path dir_ = fs::temp_directory_path() / ("orch-store-cmd-" + std::to_string(::getpid()));
};

TEST_F(StoreCommandTest, CheckPassesASoundStoreAndFailsADamagedOneNamingTheExperiment) {
  ProcessResult sound = RunProcess({OrchBinary(), "store", "check", data()});
  EXPECT_EQ(sound.exit_code, 0) << sound.err;
  EXPECT_THAT(sound.out, HasSubstr("every checksum and record sound"));

  ASSERT_TRUE(store::WriteRawValueForTesting(store::RocksDbPathInDataDir(data()), "jobs", "exp-job",
                                             std::string("\x07", 1))
                  .ok());
  ProcessResult damaged = RunProcess({OrchBinary(), "store", "check", data()});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.out, HasSubstr("experiment exp: 1 problems"));
  EXPECT_THAT(damaged.out, HasSubstr("jobs/exp-job"));
  EXPECT_THAT(damaged.out, HasSubstr("orch store restore"));

  ProcessResult json = RunProcess({OrchBinary(), "store", "check", data(), "--json"});
  EXPECT_EQ(json.exit_code, 1);
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["schema"], "orch.store-check/1");
  EXPECT_EQ(parsed["ok"], false);
  EXPECT_EQ(parsed["experiments"][0]["experiment"], "exp");
  EXPECT_EQ(parsed["experiments"][0]["problems"][0]["where"], "jobs/exp-job");
}

TEST_F(StoreCommandTest, CheckOfADirectoryWithoutAStoreSaysSo) {
  ProcessResult none = RunProcess({OrchBinary(), "store", "check", (dir_ / "nothing").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("no store at"));
}

TEST_F(StoreCommandTest, BackupThenRestoreIntoANewDataDirectory) {
  std::string backups = (dir_ / "backups").string();
  ProcessResult backup = RunProcess({OrchBinary(), "store", "backup", data(), backups});
  ASSERT_EQ(backup.exit_code, 0) << backup.err;
  EXPECT_THAT(backup.out, HasSubstr("backup 1 of"));
  EXPECT_THAT(backup.out, HasSubstr("verified"));

  ProcessResult over = RunProcess({OrchBinary(), "store", "restore", backups, data()});
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_THAT(over.err, HasSubstr("Move it aside"));

  std::string restored = (dir_ / "restored").string();
  ProcessResult restore = RunProcess({OrchBinary(), "store", "restore", backups, restored});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  EXPECT_THAT(restore.out, HasSubstr("data_dir = " + restored));
  std::unique_ptr<store::Store> store =
      std::move(store::OpenRocksDbStore(store::RocksDbPathInDataDir(restored), {})).value();
  EXPECT_EQ(store->GetPlan("exp")->experiment, "exp");
}

TEST_F(StoreCommandTest, RecoverReplaysACutOffWalSavesTheDamagedStoreAndSaysSo) {
  std::string path = store::RocksDbPathInDataDir(data());
  fs::path wal;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".log" && fs::file_size(entry.path()) > 0) wal = entry.path();
  }
  ASSERT_FALSE(wal.empty());
  fs::resize_file(wal, fs::file_size(wal) - 5);
  ProcessResult refused = RunProcess({OrchBinary(), "store", "check", data()});
  EXPECT_EQ(refused.exit_code, 1) << "the store does not open strictly";

  ProcessResult recover = RunProcess({OrchBinary(), "store", "recover", data(), "--json"});
  ASSERT_EQ(recover.exit_code, 0) << recover.err;
  nlohmann::json parsed = nlohmann::json::parse(recover.out);
  EXPECT_EQ(parsed["schema"], "orch.store-recover/1");
  EXPECT_EQ(parsed["recovered"], true);
  EXPECT_EQ(parsed["lost_total"], 0);
  EXPECT_FALSE(parsed["wal_messages"].empty());
  std::string saved = parsed["saved_copy"];
  EXPECT_THAT(saved, HasSubstr(path + ".damaged-"));
  EXPECT_TRUE(fs::exists(fs::path(saved) / wal.filename()));

  ProcessResult sound = RunProcess({OrchBinary(), "store", "check", data()});
  EXPECT_EQ(sound.exit_code, 0) << sound.out;
  ProcessResult again = RunProcess({OrchBinary(), "store", "recover", data()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to recover"));
}

// A store with two WALs (store/rocksdb_store.h) whose older one is cut short: recover
// replays every sound record and names the damaged WAL and where it is kept.
TEST_F(StoreCommandTest, RecoverNamesADamagedOlderWalAndKeepsIt) {
  std::string path = store::RocksDbPathInDataDir(data());
  fs::remove_all(path);
  auto put_jobs = [](const std::string& exp) {
    return [exp](store::Store& store) {
      for (int i = 0; i < 10; ++i) {
        store::JobRecord job;
        job.id = exp + "-job-" + std::to_string(i);
        job.experiment = exp;
        ORCH_RETURN_IF_ERROR(store.PutPlan({exp, "{}"}, {job}).status());
      }
      return Status::Ok();
    };
  };
  ASSERT_TRUE(
      store::WriteAcrossTwoWalsForTesting(path, "plans", put_jobs("old"), put_jobs("new")).ok());
  std::vector<fs::path> wals;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".log") wals.push_back(entry.path());
  }
  std::sort(wals.begin(), wals.end());
  ASSERT_EQ(wals.size(), 2u);
  fs::resize_file(wals[0], fs::file_size(wals[0]) - 5);  // inside old-job-9's write

  ProcessResult recover = RunProcess({OrchBinary(), "store", "recover", data(), "--json"});
  ASSERT_EQ(recover.exit_code, 0) << recover.err;
  nlohmann::json parsed = nlohmann::json::parse(recover.out);
  EXPECT_EQ(parsed["recovered"], true);
  EXPECT_EQ(parsed["replay"], "every_sound_record");
  ASSERT_EQ(parsed["damaged_wals"].size(), 1u);
  EXPECT_EQ(parsed["damaged_wals"][0]["file"], wals[0].filename().string());
  EXPECT_EQ(parsed["damaged_wals"][0]["unreadable_writes"], 2) << "old-job-9 and its index entry";
  std::string kept = parsed["damaged_wals"][0]["saved_as"];
  EXPECT_TRUE(fs::exists(kept));
  std::unique_ptr<store::Store> store = std::move(store::OpenRocksDbStore(path, {})).value();
  EXPECT_TRUE(store->GetJob("old-job-8").ok());
  EXPECT_EQ(store->GetJob("old-job-9").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->GetJob("new-job-9").ok());
}

TEST_F(StoreCommandTest, RecoverWritesAMissingCurrentAgain) {
  std::string path = store::RocksDbPathInDataDir(data());
  fs::remove(fs::path(path) / "CURRENT");
  ProcessResult refused = RunProcess({OrchBinary(), "store", "check", data()});
  EXPECT_NE(refused.exit_code, 0);

  ProcessResult recover = RunProcess({OrchBinary(), "store", "recover", data()});
  ASSERT_EQ(recover.exit_code, 0) << recover.err;
  EXPECT_THAT(recover.out, HasSubstr("CURRENT was missing; wrote it again naming MANIFEST-"));
  EXPECT_THAT(recover.out, HasSubstr("The damaged store is saved as " + path + ".damaged-"));
  std::unique_ptr<store::Store> store = std::move(store::OpenRocksDbStore(path, {})).value();
  EXPECT_EQ(store->GetJob("exp-job")->experiment, "exp");
}

TEST_F(StoreCommandTest, EachCommandExplainsItselfWithHelp) {
  for (std::string command : {"check", "backup", "restore", "recover"}) {
    ProcessResult help = RunProcess({OrchBinary(), "store", command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_THAT(help.out, HasSubstr("Exit status")) << command;
  }
}

}  // namespace
}  // namespace orch::testing
