#include "store/store_recover.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "store/record_owners.h"
#include "store/rocksdb_db.h"
#include "store/rocksdb_log_file.h"

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

// The WAL file a RocksDB message is about: "/x/000012.log: dropping 32 bytes" ->
// "000012.log"; empty when it names none.
std::string WalFileOf(const std::string& message) {
  size_t end = message.find(".log: dropping");
  if (end == std::string::npos) return "";
  size_t begin = message.find_last_of("/ ", end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return message.substr(begin, end + 4 - begin);
}

struct SoundBatch {
  WalBatch batch;
  size_t wal = 0;  // index into the WAL files
};

// Names each WAL RocksDB reported damaged (`messages`) or that does not read completely,
// with the bytes that do not read
// and the writes they held: the sequence numbers missing between the sound records
// around the damage (`latest_sequence`: the last one the store knows of).
Status DescribeDamagedWals(const std::string& path, const std::vector<std::string>& messages,
                           uint64_t latest_sequence, RecoveryReport& report) {
  std::vector<std::string> files = WalFiles(path);
  std::set<std::string> damaged;
  for (const std::string& message : messages) {
    std::string file = WalFileOf(message);
    if (!file.empty()) damaged.insert(file);
  }
  std::vector<SoundBatch> batches;
  std::map<size_t, DamagedWal> by_wal;
  for (size_t i = 0; i < files.size(); ++i) {
    ORCH_ASSIGN_OR_RETURN(LogFileContents contents,
                          ReadLogFile((fs::path(path) / files[i]).string()));
    for (const std::string& record : contents.records) {
      WalBatch batch;
      if (ParseWalBatch(record, batch)) batches.push_back({batch, i});
    }
    // RocksDB says nothing of a cut-off end when it skips damage; the reader does.
    if (damaged.count(files[i]) == 0 && contents.unreadable_bytes == 0) continue;
    DamagedWal& wal = by_wal[i];
    wal.file = files[i];
    wal.newest = i + 1 == files.size();
    wal.unreadable_bytes = contents.unreadable_bytes;
  }
  std::stable_sort(batches.begin(), batches.end(), [](const SoundBatch& a, const SoundBatch& b) {
    return a.batch.sequence < b.batch.sequence;
  });
  auto note_gap = [&](size_t wal, uint64_t first, uint64_t last) {
    auto it = by_wal.find(wal);
    if (it == by_wal.end() || last < first) return false;
    DamagedWal& damaged_wal = it->second;
    if (damaged_wal.unreadable_first == 0) damaged_wal.unreadable_first = first;
    damaged_wal.unreadable_last = last;
    damaged_wal.unreadable_writes += last - first + 1;
    return true;
  };
  for (size_t i = 0; i < batches.size(); ++i) {
    uint64_t next = batches[i].batch.sequence + batches[i].batch.count;
    uint64_t upto = i + 1 < batches.size() ? batches[i + 1].batch.sequence - 1 : latest_sequence;
    if (upto < next) continue;
    if (!note_gap(batches[i].wal, next, upto) && i + 1 < batches.size()) {
      note_gap(batches[i + 1].wal, next, upto);
    }
  }
  for (auto& [index, wal] : by_wal) report.damaged_wals.push_back(std::move(wal));
  return Status::Ok();
}

// Steps 1 and 3: false when the store opens strictly. Damage only in an older WAL
// (replaying up to it fails, as later writes already reached table files) is replayed
// record by record; damage elsewhere is refused.
Result<bool> FindLoss(const std::string& path, RecoveryReport& report) {
  Result<std::unique_ptr<RocksDb>> strict = OpenReadOnly(path, WalTail::kRefuse);
  if (strict.ok()) return false;
  if (strict.status().code() != StatusCode::kDataLoss) return strict.status();
  std::vector<std::string> up_to_messages;
  Result<std::unique_ptr<RocksDb>> kept_db =
      OpenReadOnly(path, WalTail::kStopAtDamage, &up_to_messages);
  std::vector<std::string> skip_messages;
  Result<std::unique_ptr<RocksDb>> beyond_db =
      OpenReadOnly(path, WalTail::kSkipDamage, &skip_messages);
  if (!beyond_db.ok() || (!kept_db.ok() && kept_db.status().code() != StatusCode::kDataLoss)) {
    const Status& why = beyond_db.ok() ? kept_db.status() : beyond_db.status();
    return Status(StatusCode::kDataLoss,
                  "recover " + path +
                      ": the damage is not only in the WAL, so replaying less "
                      "does not help (" +
                      why.message() +
                      "); nothing was changed. Restore a backup with `orch store restore`");
  }
  report.replay = kept_db.ok() ? Replay::kUpToTheDamage : Replay::kEverySoundRecord;
  ORCH_RETURN_IF_ERROR(DescribeDamagedWals(path, skip_messages,
                                           (*beyond_db)->db->GetLatestSequenceNumber(), report));
  report.wal_messages = up_to_messages;
  if (!kept_db.ok()) {  // only what was said of the damaged WALs, not where replay stopped
    report.wal_messages = skip_messages;
    for (const std::string& message : up_to_messages) {
      for (const DamagedWal& wal : report.damaged_wals) {
        if (WalFileOf(message) == wal.file) report.wal_messages.push_back(message);
      }
    }
  }
  std::unique_ptr<KvEngine> beyond = MakeReadOnlyRocksDbEngine(std::move(beyond_db).value());
  std::unique_ptr<KvEngine> kept =
      kept_db.ok() ? MakeReadOnlyRocksDbEngine(std::move(kept_db).value()) : nullptr;
  ORCH_ASSIGN_OR_RETURN(RecordOwners owners, RecordOwners::Learn(*beyond));
  ORCH_RETURN_IF_ERROR(
      LossFinder(kept ? *kept : *beyond, *beyond, std::move(owners), report).Run());
  return true;
}

Status SaveCopy(const std::string& path, const std::string& saved_copy) {
  std::error_code error;
  if (fs::exists(saved_copy, error)) {
    return Status(StatusCode::kFailedPrecondition,
                  "recover " + path + ": " + saved_copy + " exists; nothing was changed");
  }
  fs::copy(path, saved_copy, fs::copy_options::recursive, error);
  if (error) {
    return IoError("recover " + path + ": save a copy as " + saved_copy + ": " + error.message() +
                   "; nothing was changed");
  }
  return Status::Ok();
}

// Step 5: replays as found (up to the damage, or every sound record) as the primary,
// flushes what it kept to table files (so no damaged WAL is replayed again) and checks
// that the store now opens strictly.
Status ReplayAndFlush(const std::string& path, Replay replay) {
  {
    WalTail tail = replay == Replay::kUpToTheDamage ? WalTail::kStopAtDamage : WalTail::kSkipDamage;
    ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db,
                          OpenDb(path, DbOpenSettings{.wal_tail = tail}));
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

// Step 2, a store without CURRENT.

// The MANIFEST-NNNNNN files in `path`, oldest first.
std::vector<std::string> Manifests(const std::string& path) {
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(path, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("MANIFEST-", 0) != 0 || name.size() == 9) continue;
    std::string digits = name.substr(9);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoull(digits), name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [number, name] : found) names.push_back(std::move(name));
  return names;
}

Status WriteFileDurably(const fs::path& file, const std::string& bytes) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create " + file.string() + ": " + std::strerror(errno));
  bool written = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                 ::fsync(fd) == 0;
  int saved_errno = errno;
  ::close(fd);
  if (!written) return IoError("write " + file.string() + ": " + std::strerror(saved_errno));
  return Status::Ok();
}

// Writes CURRENT naming `manifest` the way RocksDB does: a temporary file renamed over it.
Status WriteCurrent(const std::string& path, const std::string& manifest) {
  fs::path temporary = fs::path(path) / "CURRENT.recover-tmp";
  ORCH_RETURN_IF_ERROR(WriteFileDurably(temporary, manifest + "\n"));
  std::error_code error;
  fs::rename(temporary, fs::path(path) / "CURRENT", error);
  if (error) return IoError("rename " + temporary.string() + " to CURRENT: " + error.message());
  int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

// Opens the store read-only through `manifest` in `trial` (made of hard links to its
// files, or copies where a link fails, and a CURRENT naming it), then removes `trial`.
Status TrialOpen(const std::string& path, const std::string& manifest, const fs::path& trial) {
  std::error_code error;
  fs::remove_all(trial, error);
  fs::create_directories(trial, error);
  if (error) return IoError("create " + trial.string() + ": " + error.message());
  Status opened = Status::Ok();
  for (const auto& entry : fs::directory_iterator(path, error)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == "LOCK" || name.rfind("LOG", 0) == 0) continue;
    fs::create_hard_link(entry.path(), trial / name, error);
    if (error) fs::copy_file(entry.path(), trial / name, error);
    if (error) opened = IoError("copy " + name + " to " + trial.string() + ": " + error.message());
  }
  if (opened.ok()) opened = WriteFileDurably(trial / "CURRENT", manifest + "\n");
  if (opened.ok()) {
    opened = OpenReadOnly(trial.string(), WalTail::kSkipDamage).status();
  }
  fs::remove_all(trial, error);
  return opened;
}

// The MANIFEST a CURRENT should name: the newest, when it reads completely and the store
// opens through it, and no older one opens too.
Result<std::string> ChooseManifest(const std::string& path, const fs::path& trial) {
  std::vector<std::string> manifests = Manifests(path);
  std::string refused = "recover " + path + ": there is no CURRENT file, ";
  std::string unchanged = "; nothing was changed. Restore a backup with `orch store restore`";
  if (manifests.empty())
    return Status(StatusCode::kDataLoss, refused + "and no MANIFEST" + unchanged);
  const std::string& newest = manifests.back();
  ORCH_ASSIGN_OR_RETURN(LogFileContents contents, ReadLogFile((fs::path(path) / newest).string()));
  if (contents.unreadable_bytes > 0 || contents.records.empty()) {
    return Status(
        StatusCode::kDataLoss,
        refused + "and the newest MANIFEST, " + newest + ", does not read completely (" +
            (contents.records.empty() ? std::string("no record") : contents.first_damage) + ", " +
            std::to_string(contents.unreadable_bytes) +
            " bytes unreadable), so no CURRENT is written naming it" + unchanged);
  }
  Status opens = TrialOpen(path, newest, trial);
  if (!opens.ok()) {
    return Status(StatusCode::kDataLoss, refused + "and the store does not open through " + newest +
                                             " (" + opens.message() + ")" + unchanged);
  }
  for (size_t i = 0; i + 1 < manifests.size(); ++i) {
    if (TrialOpen(path, manifests[i], trial).ok()) {
      return Status(StatusCode::kFailedPrecondition,
                    refused + "and both " + manifests[i] + " and " + newest +
                        " open the store: which one CURRENT named cannot be told" + unchanged);
    }
  }
  return newest;
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
  RecoveryReport report;
  report.path = path;
  if (!fs::exists(fs::path(path) / "CURRENT", error)) {
    if (CheckNotOrphaned(path).ok()) return NotFound("no store at " + path);
    ORCH_ASSIGN_OR_RETURN(report.current_restored, ChooseManifest(path, saved_copy + ".trial"));
    ORCH_RETURN_IF_ERROR(SaveCopy(path, saved_copy));
    report.saved_copy = saved_copy;
    ORCH_RETURN_IF_ERROR(WriteCurrent(path, report.current_restored)
                             .WithContext("recover " + path + " (the store as it was is saved as " +
                                          saved_copy + ")"));
  }
  std::string restored = report.current_restored.empty()
                             ? ""
                             : " (CURRENT was written again, naming " + report.current_restored +
                                   "; the store as it was is saved as " + saved_copy + ")";
  Result<bool> damaged = FindLoss(path, report);
  if (!damaged.ok()) return Status(damaged.status().code(), damaged.status().message() + restored);
  if (!*damaged) {
    report.recovered = !report.current_restored.empty();
    return report;
  }
  if (report.saved_copy.empty()) {
    ORCH_RETURN_IF_ERROR(SaveCopy(path, saved_copy));
    report.saved_copy = saved_copy;
  }
  for (DamagedWal& wal : report.damaged_wals) {
    wal.saved_as = (fs::path(saved_copy) / wal.file).string();
  }
  Status replayed = ReplayAndFlush(path, report.replay);
  if (!replayed.ok()) {
    return replayed.WithContext("recover " + path + " (the damaged store is saved as " +
                                saved_copy + ")");
  }
  report.recovered = true;
  return report;
}

}  // namespace orch::store
