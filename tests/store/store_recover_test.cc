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
#include <map>
#include <set>

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

std::string ReadWholeFile(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteWholeFile(const fs::path& file, const std::string& bytes) {
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
        job.experiment = exp;
        ASSERT_TRUE(store->PutPlan({exp, "{}"}, {job}).ok());
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
    std::string bytes = ReadWholeFile(wal);
    size_t at = bytes.find(marker);
    EXPECT_NE(at, std::string::npos) << marker;
    for (size_t i = at; i < at + 100 && i < bytes.size(); ++i) bytes[i] = 'X';
    WriteWholeFile(wal, bytes);
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
  EXPECT_TRUE(ReadWholeFile(fs::path(saved()) / wal_name) == damaged) << "the saved WAL differs";
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
  std::string bytes = ReadWholeFile(wal);
  WriteWholeFile(wal, bytes.substr(0, bytes.size() - 300));  // inside the last chunk's batch
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
  std::string before = ReadWholeFile(Wal());

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());

  ASSERT_EQ(::write(release[1], "x", 1), 1);
  int status = 0;
  ::waitpid(holder, &status, 0);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("stop it first"));
  EXPECT_EQ(ReadWholeFile(Wal()), before);
  EXPECT_FALSE(fs::exists(saved()));
}

TEST_F(StoreRecoverTest, DamageOutsideTheWalIsNotRecoveredAndNothingChanges) {
  { std::unique_ptr<Store> store = std::move(OpenRocksDbStore(path(), RocksDbOptions{})).value(); }
  fs::path sst;
  for (const auto& entry : fs::directory_iterator(path())) {
    if (entry.path().extension() == ".sst") sst = entry.path();
  }
  ASSERT_FALSE(sst.empty()) << "the reopen flushed the WAL to table files";
  fs::resize_file(sst, fs::file_size(sst) / 2);
  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("not only in the WAL"));
  EXPECT_FALSE(fs::exists(saved()));
}

TEST_F(StoreRecoverTest, NoStoreThereIsNotFound) {
  Result<RecoveryReport> report = RecoverRocksDbStore((dir_.path() / "none").string(), saved());
  EXPECT_EQ(report.status().code(), StatusCode::kNotFound);
}

// Every record of every table, as "table/key" -> value bytes.
std::map<std::string, std::string> AllRecords(const std::string& path) {
  std::map<std::string, std::string> records;
  TempDir scratch;
  std::unique_ptr<Store> store =
      std::move(OpenRocksDbStoreForReading(path, scratch.path().string())).value();
  StoreState state = std::move(store->LoadState()).value();
  for (const PlanRecord& plan : state.plans) records["plans/" + plan.experiment] = plan.json;
  for (const JobRecord& job : state.jobs) records["jobs/" + job.id] = job.experiment;
  for (const RunRecord& run : state.runs) {
    records["runs/" + run.id] = run.job_id;
    EXPECT_TRUE(store
                    ->ScanDigests(run.id, 0,
                                  [&](uint64_t position, std::string_view digest) {
                                    records["digests/" + run.id + "/" + std::to_string(position)] =
                                        std::string(digest);
                                    return true;
                                  })
                    .ok());
  }
  return records;
}

// A store with two WALs, as a busy store has them: alpha's jobs, runs and digests, then
// beta's jobs go to the first WAL; the digests table is flushed (RocksDB starts a second
// WAL and keeps the first for the tables that did not flush); gamma's jobs, runs and
// digests go to the second.
class OlderWalTest : public ::testing::Test {
 protected:
  static constexpr int kJobs = 30;

  void SetUp() override {
    auto write_runs = [](Store& store, const std::string& exp, bool with_runs) {
      for (int i = 0; i < kJobs; ++i) {
        JobRecord job;
        job.id = exp + "-job-" + std::to_string(i);
        job.experiment = exp;
        ORCH_RETURN_IF_ERROR(store.PutPlan({exp, "{}"}, {job}).status());
        if (!with_runs) continue;
        RunRecord run;
        run.id = exp + "-run-" + std::to_string(i);
        run.job_id = job.id;
        ORCH_RETURN_IF_ERROR(store.Apply({.job = std::nullopt, .run = run, .events = {}}));
        std::vector<DigestRecord> digests;
        for (uint32_t p = 0; p < 20; ++p)
          digests.push_back({p, std::string(100, static_cast<char>('a' + p))});
        ORCH_RETURN_IF_ERROR(store.AppendChunk(run.id, 0, digests).status());
      }
      return Status::Ok();
    };
    Status written = WriteAcrossTwoWalsForTesting(
        path(), "digests",
        [&](Store& store) {
          ORCH_RETURN_IF_ERROR(write_runs(store, "alpha", true));
          return write_runs(store, "beta", false);
        },
        [&](Store& store) { return write_runs(store, "gamma", true); });
    ASSERT_TRUE(written.ok()) << written.ToString();
    std::vector<fs::path> wals;
    for (const auto& entry : fs::directory_iterator(path())) {
      if (entry.path().extension() == ".log") wals.push_back(entry.path());
    }
    std::sort(wals.begin(), wals.end());
    ASSERT_EQ(wals.size(), 2u) << "two WALs";
    older_ = wals[0];
    newer_ = wals[1];
    before_ = AllRecords(path());
  }

  std::string path() const { return (dir_.path() / "rocksdb").string(); }
  std::string saved() const { return (dir_.path() / "rocksdb.damaged").string(); }

  TempDir dir_;
  fs::path older_, newer_;
  std::map<std::string, std::string> before_;
};

TEST_F(OlderWalTest, ACutOffOlderWalKeepsEverySoundRecordAndNamesTheWalAndItsLostWrites) {
  // Cut the older WAL inside the write of beta-job-20: that write and beta's last nine
  // (two records each: the job and its plan_jobs index entry) are gone.
  std::string bytes = ReadWholeFile(older_);
  size_t cut = bytes.find("beta-job-20");
  ASSERT_NE(cut, std::string::npos);
  WriteWholeFile(older_, bytes.substr(0, cut));
  std::string damaged = ReadWholeFile(older_);
  ASSERT_FALSE(OpenRocksDbStore(path(), RocksDbOptions{}).ok()) << "the open refuses it";

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->recovered);
  EXPECT_EQ(report->replay, Replay::kEverySoundRecord);
  EXPECT_TRUE(report->lost.empty()) << "no readable record is dropped";
  ASSERT_EQ(report->damaged_wals.size(), 1u);
  const DamagedWal& wal = report->damaged_wals.front();
  EXPECT_EQ(wal.file, older_.filename().string());
  EXPECT_FALSE(wal.newest);
  EXPECT_GT(wal.unreadable_bytes, 0u);
  EXPECT_EQ(wal.unreadable_writes, 20u) << "10 jobs and their 10 index entries";
  EXPECT_EQ(wal.unreadable_last - wal.unreadable_first + 1, 20u);
  EXPECT_EQ(wal.saved_as, (fs::path(saved()) / older_.filename()).string());
  EXPECT_TRUE(ReadWholeFile(wal.saved_as) == damaged) << "the damaged WAL is kept as it was";
  ASSERT_FALSE(report->wal_messages.empty());
  EXPECT_THAT(report->wal_messages.front(), HasSubstr(wal.file + ": dropping"));

  std::map<std::string, std::string> after = AllRecords(path());
  std::set<std::string> dropped;
  for (const auto& [key, value] : before_) {
    auto found = after.find(key);
    if (found == after.end()) {
      dropped.insert(key);
    } else {
      EXPECT_EQ(found->second, value) << key;
    }
  }
  std::set<std::string> expected;
  for (int i = 20; i < OlderWalTest::kJobs; ++i)
    expected.insert("jobs/beta-job-" + std::to_string(i));
  EXPECT_EQ(dropped, expected);
  EXPECT_EQ(after.size(), before_.size() - expected.size()) << "nothing new appeared";
  Result<StoreCheckReport> check = CheckRocksDbStore(path());
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->ok()) << check->problems.front().what;
}

TEST_F(OlderWalTest, AMissingCurrentIsWrittenAgainAndEveryRecordIsBack) {
  std::string manifest;
  for (const auto& entry : fs::directory_iterator(path())) {
    std::string name = entry.path().filename().string();
    if (name.rfind("MANIFEST-", 0) == 0) manifest = name;
  }
  ASSERT_FALSE(manifest.empty());
  std::string current = ReadWholeFile(fs::path(path()) / "CURRENT");
  fs::remove(fs::path(path()) / "CURRENT");
  ASSERT_FALSE(OpenRocksDbStore(path(), RocksDbOptions{}).ok()) << "the open refuses it";

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->recovered);
  EXPECT_EQ(report->current_restored, manifest);
  EXPECT_TRUE(report->damaged_wals.empty());
  EXPECT_EQ(ReadWholeFile(fs::path(path()) / "CURRENT"), current);
  EXPECT_FALSE(fs::exists(fs::path(saved()) / "CURRENT")) << "the store as it was";
  EXPECT_FALSE(fs::exists(saved() + ".trial"));
  EXPECT_EQ(AllRecords(path()), before_);
}

TEST_F(OlderWalTest, AMissingCurrentWithADamagedManifestIsRefusedAndNothingChanges) {
  fs::path manifest;
  for (const auto& entry : fs::directory_iterator(path())) {
    if (entry.path().filename().string().rfind("MANIFEST-", 0) == 0) manifest = entry.path();
  }
  fs::remove(fs::path(path()) / "CURRENT");
  fs::resize_file(manifest, fs::file_size(manifest) - 10);  // its last edit cut short
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(path())) {
    files[entry.path().filename().string()] = ReadWholeFile(entry.path());
  }

  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(report.status().message(), HasSubstr(manifest.filename().string()));
  EXPECT_THAT(report.status().message(), HasSubstr("does not read completely"));
  EXPECT_THAT(report.status().message(), HasSubstr("nothing was changed"));
  std::map<std::string, std::string> after;
  for (const auto& entry : fs::directory_iterator(path())) {
    after[entry.path().filename().string()] = ReadWholeFile(entry.path());
  }
  EXPECT_TRUE(after == files) << "no file added, removed or changed";
  EXPECT_FALSE(fs::exists(saved()));
  EXPECT_FALSE(fs::exists(saved() + ".trial"));
}

TEST_F(OlderWalTest, AMissingCurrentWithTwoManifestsThatBothOpenIsRefused) {
  fs::path manifest;
  for (const auto& entry : fs::directory_iterator(path())) {
    if (entry.path().filename().string().rfind("MANIFEST-", 0) == 0) manifest = entry.path();
  }
  fs::remove(fs::path(path()) / "CURRENT");
  fs::copy_file(manifest, fs::path(path()) / "MANIFEST-999999");
  Result<RecoveryReport> report = RecoverRocksDbStore(path(), saved());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr(manifest.filename().string()));
  EXPECT_THAT(report.status().message(), HasSubstr("MANIFEST-999999"));
  EXPECT_THAT(report.status().message(), HasSubstr("cannot be told"));
  EXPECT_FALSE(fs::exists(fs::path(path()) / "CURRENT"));
  EXPECT_FALSE(fs::exists(saved()));
}

}  // namespace
}  // namespace orch::store
