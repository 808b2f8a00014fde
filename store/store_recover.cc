#include "store/store_recover.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "store/record_owners.h"
#include "store/rocksdb_db.h"

namespace orch::store {
namespace {

namespace fs = std::filesystem;

// True when another process holds RocksDB's LOCK of the store at `path` (a running
// coordinator). RocksDB locks with fcntl, so F_GETLK sees it without taking it.
bool LockedByAnotherProcess(const std::string& path) {
  int fd = ::open((fs::path(path) / "LOCK").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe = {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  bool locked = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return locked;
}

Result<std::unique_ptr<RocksDb>> OpenReadOnly(const std::string& path, WalTail tail,
                                              std::vector<std::string>* messages = nullptr) {
  return OpenDb(
      path, DbOpenSettings{.role = DbRole::kReadOnly, .wal_tail = tail, .wal_messages = messages});
}

// Every record `beyond` holds that `kept` lacks or holds with other bytes, grouped by
// experiment and table; counts the records `kept` holds.
class LossFinder {
 public:
  LossFinder(KvEngine& kept, KvEngine& beyond, RecordOwners owners, RecoveryReport& report)
      : kept_(kept), beyond_(beyond), owners_(std::move(owners)), report_(report) {}

  Status Run() {
    for (int t = 0; t < kTableCount; ++t) {
      Table table = static_cast<Table>(t);
      ORCH_RETURN_IF_ERROR(kept_.Scan(table, "", "", [&](std::string_view, std::string_view) {
        ++report_.records_kept;
        return true;
      }));
      Status compared = Status::Ok();
      ORCH_RETURN_IF_ERROR(
          beyond_.Scan(table, "", "", [&](std::string_view key, std::string_view value) {
            compared = Compare(table, key, value);
            return compared.ok();
          }));
      ORCH_RETURN_IF_ERROR(compared);
    }
    for (auto& [where, lost] : lost_) report_.lost.push_back(std::move(lost));
    return Status::Ok();
  }

 private:
  Status Compare(Table table, std::string_view key, std::string_view value) {
    ORCH_ASSIGN_OR_RETURN(std::optional<std::string> kept, kept_.Get(table, key));
    if (kept && *kept == value) return Status::Ok();
    std::string experiment = owners_.ExperimentOf(table, key, value);
    LostRecords& lost = lost_[{experiment, static_cast<int>(table)}];
    lost.experiment = experiment;
    lost.table = std::string(TableName(table));
    ++lost.count;
    ++report_.lost_total;
    if (lost.examples.size() < 3) lost.examples.push_back(DescribeKey(table, key));
    return Status::Ok();
  }
  KvEngine& kept_;
  KvEngine& beyond_;
  RecordOwners owners_;
  RecoveryReport& report_;
  std::map<std::pair<std::string, int>, LostRecords> lost_;  // by experiment, table
};

// Steps 1 and 2: nullopt when the store opens strictly.
Result<std::optional<RecoveryReport>> FindLoss(const std::string& path) {
  RecoveryReport report;
  report.path = path;
  Result<std::unique_ptr<RocksDb>> strict = OpenReadOnly(path, WalTail::kRefuse);
  if (strict.ok()) return std::optional<RecoveryReport>();
  if (strict.status().code() != StatusCode::kDataLoss) return strict.status();
  Result<std::unique_ptr<RocksDb>> kept_db =
      OpenReadOnly(path, WalTail::kStopAtDamage, &report.wal_messages);
  if (!kept_db.ok()) {
    return Status(StatusCode::kDataLoss,
                  "recover " + path +
                      ": the damage is not only in the WAL, so replaying up to "
                      "it does not help (" +
                      kept_db.status().message() +
                      "); nothing was changed. Restore a backup with `orch store restore`");
  }
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> beyond_db,
                        OpenReadOnly(path, WalTail::kSkipDamage));
  std::unique_ptr<KvEngine> kept = MakeReadOnlyRocksDbEngine(std::move(kept_db).value());
  std::unique_ptr<KvEngine> beyond = MakeReadOnlyRocksDbEngine(std::move(beyond_db));
  ORCH_ASSIGN_OR_RETURN(RecordOwners owners, RecordOwners::Learn(*beyond));
  ORCH_RETURN_IF_ERROR(LossFinder(*kept, *beyond, std::move(owners), report).Run());
  return std::optional<RecoveryReport>(std::move(report));
}

Status SaveCopy(const std::string& path, const std::string& saved_copy) {
  std::error_code error;
  fs::copy(path, saved_copy, fs::copy_options::recursive, error);
  if (error) {
    return IoError("recover " + path + ": save a copy as " + saved_copy + ": " + error.message() +
                   "; nothing was changed");
  }
  return Status::Ok();
}

// Step 4: replays up to the damage as the primary, flushes what it kept to table files
// (so no damaged WAL is replayed again) and checks that the store now opens strictly.
Status ReplayUpToTheDamage(const std::string& path) {
  {
    ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db,
                          OpenDb(path, DbOpenSettings{.wal_tail = WalTail::kStopAtDamage}));
    std::vector<rocksdb::ColumnFamilyHandle*> families;
    for (rocksdb::ColumnFamilyHandle* handle : db->handles) {
      if (handle) families.push_back(handle);
    }
    rocksdb::FlushOptions flush;
    flush.wait = true;
    ORCH_RETURN_IF_ERROR(FromRocks(db->db->Flush(flush, families)).WithContext("flush"));
    ORCH_RETURN_IF_ERROR(FromRocks(db->db->SyncWAL()).WithContext("sync the new WAL"));
  }
  Result<std::unique_ptr<RocksDb>> strict = OpenDb(path, DbOpenSettings{});
  return strict.status();
}

}  // namespace

Result<RecoveryReport> RecoverRocksDbStore(const std::string& path, const std::string& saved_copy) {
  std::error_code error;
  if (!fs::is_directory(path, error)) return NotFound("no store at " + path);
  if (LockedByAnotherProcess(path)) {
    return Status(StatusCode::kFailedPrecondition,
                  "recover " + path +
                      ": another process (a running coordinator?) has it open; "
                      "stop it first. Nothing was changed");
  }
  ORCH_ASSIGN_OR_RETURN(std::optional<RecoveryReport> report, FindLoss(path));
  if (!report) {
    RecoveryReport untouched;
    untouched.path = path;
    return untouched;
  }
  if (fs::exists(saved_copy, error)) {
    return Status(StatusCode::kFailedPrecondition,
                  "recover " + path + ": " + saved_copy + " exists; nothing was changed");
  }
  ORCH_RETURN_IF_ERROR(SaveCopy(path, saved_copy));
  report->saved_copy = saved_copy;
  Status replayed = ReplayUpToTheDamage(path);
  if (!replayed.ok()) {
    return replayed.WithContext("recover " + path + " (the damaged store is saved as " +
                                saved_copy + ")");
  }
  report->recovered = true;
  return std::move(report).value();
}

}  // namespace orch::store
