// `orch store recover` underneath: a store whose WAL is damaged is brought back to the
// last state that replays cleanly, after naming every record that drops (by experiment)
// and saving the damaged directory; a sound store and a store in use are left alone.
#include "store/store_recover.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/rocksdb_store.h"
#include "store/store_check.h"
#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int kRunsPerExperiment = 30;
constexpr int kDigestsPerRun = 50;

std::string ReadAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A store at DIR/rocksdb holding experiments alpha, then beta, all in one WAL: per
// experiment 30 jobs, each with one run of one chunk of 50 digests of 200 bytes
// (about 300 KB of WAL each, so damage in alpha leaves later WAL blocks readable).
class StoreRecoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
    for (std::string exp : {"alpha", "beta"}) {
      for (int i = 0; i < kRunsPerExperiment; ++i) {
        JobRecord job;
        job.id = exp + "-job-" + std::to_string(i);
        job.plan_id = exp;
        ASSERT_TRUE(store->PutPlan({exp, exp, "{}"}, {job}).ok());
        RunRecord run;
        run.id = exp + "-run-" + std::to_string(i);
        run.job_id = job.id;
        ASSERT_TRUE(store->Apply({.job = std::nullopt, .run = run, .events = {}}).ok());
        std::vector<DigestRecord> digests;
        for (int p = 0; p < kDigestsPerRun; ++p) {
          digests.push_back(
              {static_cast<uint32_t>(p), std::string(200, static_cast<char>('a' + p % 26))});
        }
        ASSERT_TRUE(store->AppendChunk(run.id, 0, digests).ok());
      }
    }
  }

  std::string path() const { return (dir_.path() / "rocksdb").string(); }
  std::string saved() const { return (dir_.path() / "rocksdb.damaged").string(); }
  fs::path Wal() const {
    for (const auto& entry : fs::directory_iterator(path())) {
      if (entry.path().extension() == ".log" && fs::file_size(entry.path()) > 0)
        return entry.path();
    }
    ADD_FAILURE() << "no WAL in " << path();
    return {};
  }
  // Overwrites 100 bytes of the WAL where the key `marker` is first written.
  std::string DamageWalAt(const std::string& marker) {
    fs::path wal = Wal();
    std::string bytes = ReadAll(wal);
    size_t at = bytes.find(marker);
    EXPECT_NE(at, std::string::npos) << marker;
    for (size_t i = at; i < at + 100 && i < bytes.size(); ++i) bytes[i] = 'X';
    WriteAll(wal, bytes);
    return bytes;
  }
  static const LostRecords* Find(const RecoveryReport& report, const std::string& experiment,
                                 const std::string& table) {
    for (const LostRecords& lost : report.lost) {
      if (lost.experiment == experiment && lost.table == table) return &lost;
    }
    return nullptr;
  }

  TempDir dir_;
};

TEST_F(StoreRecoverTest, ASoundStoreIsLeftAsItIs) {
  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->recovered);
  EXPECT_TRUE(report->lost.empty());
  EXPECT_FALSE(fs::exists(saved())) << "no copy of a sound store";
}

TEST_F(StoreRecoverTest, OverwrittenWalBytesDropWhatFollowsAndEveryDroppedRecordIsNamed) {
  std::string damaged = DamageWalAt("alpha-run-20");
  fs::path wal_name = Wal().filename();
  Result<std::unique_ptr<Store>> refused = OpenRocksDbStore(path(), RocksDbOptions{});
  ASSERT_FALSE(refused.ok()) << "the open refuses it";
  EXPECT_THAT(refused.status().message(), HasSubstr("orch store recover " + dir_.path().string()));

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->recovered);
  ASSERT_FALSE(report->wal_messages.empty());
  EXPECT_THAT(report->wal_messages.front(), HasSubstr("dropping"));

  // Every record of beta was written after the damage: all of them are named as lost.
  const LostRecords* beta_jobs = Find(*report, "beta", "jobs");
  ASSERT_NE(beta_jobs, nullptr);
  EXPECT_EQ(beta_jobs->count, static_cast<uint64_t>(kRunsPerExperiment));
  EXPECT_THAT(beta_jobs->examples, Contains("jobs/beta-job-0"));
  const LostRecords* beta_digests = Find(*report, "beta", "digests");
  ASSERT_NE(beta_digests, nullptr);
  EXPECT_EQ(beta_digests->count, static_cast<uint64_t>(kRunsPerExperiment * kDigestsPerRun));
  const LostRecords* alpha_runs = Find(*report, "alpha", "runs");
  ASSERT_NE(alpha_runs, nullptr) << "alpha's runs after the damaged block";
  EXPECT_LT(alpha_runs->count, 10u);
  EXPECT_GT(report->records_kept, 20u * kDigestsPerRun);

  // The damaged store is kept byte for byte; the recovered one opens strictly and holds
  // alpha's records before the damage and nothing of beta.
  EXPECT_TRUE(ReadAll(fs::path(saved()) / wal_name) == damaged) << "the saved WAL differs";
  std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
  EXPECT_TRUE(store->GetRun("alpha-run-0").ok());
  EXPECT_TRUE(store->GetRun("alpha-run-19").ok());
  EXPECT_EQ(store->GetPlan("beta").status().code(), StatusCode::kNotFound);
  store.reset();
  Result<StoreCheckReport> check = CheckRocksDbStore(path());
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->ok()) << check->problems.front().what;
}

TEST_F(StoreRecoverTest, AWalCutOffInItsLastRecordLosesOnlyThatRecord) {
  fs::path wal = Wal();
  std::string bytes = ReadAll(wal);
  WriteAll(wal, bytes.substr(0, bytes.size() - 300));  // inside the last chunk's batch
  ASSERT_FALSE(OpenRocksDbStore(path(), RocksDbOptions{}).ok());

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->recovered);
  EXPECT_TRUE(report->lost.empty()) << "nothing readable lay beyond the cut";
  std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value();
  EXPECT_TRUE(store->GetRun("beta-run-29").ok()) << "the run record came before its chunk";
  uint64_t digests = 0;
  ASSERT_TRUE(store
                  ->ScanDigests("beta-run-28", 0,
                                [&](uint64_t, std::string_view) {
                                  ++digests;
                                  return true;
                                })
                  .ok());
  EXPECT_EQ(digests, static_cast<uint64_t>(kDigestsPerRun)) << "the chunk before the cut";
}

TEST_F(StoreRecoverTest, AStoreAnotherProcessHoldsIsRefusedAndLeftAsItIs) {
  DamageWalAt("alpha-run-20");
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // takes the LOCK the way RocksDB does (fcntl), until released
    int fd = ::open((fs::path(path()) / "LOCK").c_str(), O_RDWR);
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    char byte = ::fcntl(fd, F_SETLK, &lock) == 0 ? 'y' : 'n';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    if (::read(release[0], &byte, 1) < 0) ::_exit(1);
    ::_exit(0);
  }
  char locked = 0;
  ASSERT_EQ(::read(ready[0], &locked, 1), 1);
  ASSERT_EQ(locked, 'y');
  std::string before = ReadAll(Wal());

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());

  ASSERT_EQ(::write(release[1], "x", 1), 1);
  int status = 0;
  ::waitpid(holder, &status, 0);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("stop it first"));
  EXPECT_EQ(ReadAll(Wal()), before);
  EXPECT_FALSE(fs::exists(saved()));
}

TEST_F(StoreRecoverTest, DamageOutsideTheWalIsNotRecoveredAndNothingChanges) {
  { std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value(); }
  fs::remove(fs::path(path()) / "CURRENT");
  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("no CURRENT"));
  EXPECT_FALSE(fs::exists(saved()));
}

TEST_F(StoreRecoverTest, NoStoreThereIsNotFound) {
  Result<RecoveryReport> report = RecoverRocksDbStore((dir_.path() / "none").string(), saved());
  EXPECT_EQ(report.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace orch::store
