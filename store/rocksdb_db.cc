#include "store/rocksdb_db.h"

#include "store/rocksdb_log_file.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "store/rocksdb_info_log.h"

namespace orch::store {
namespace {

// The store drives recovery itself (rocksdb_engine.cc): RocksDB's automatic recovery
// from a full disk waits for free space above the write buffer size (64 MiB) and, while
// it runs, makes DB::Resume answer Busy.
class NoAutomaticRecovery final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

// Memory. RocksDB's defaults are per column family: a 64 MiB memtable (two while one
// flushes) and an 8 MiB block cache each, so the store's ten tables could hold over a
// gigabyte, and under load (every run's records and state changes arriving at once)
// the memtables alone grew by hundreds of MiB. One budget for all tables instead: the
// memtables of every table together are flushed once they pass kMemtableBudget, and
// every table reads through one block cache. A table's own memtable size stays at the
// default: the budget is reached first. (The budget also caps the WAL space RocksDB
// preallocates, at most the budget.)
constexpr size_t kMemtableBudget = 32 << 20;
constexpr size_t kBlockCacheSize = 32 << 20;

rocksdb::ColumnFamilyOptions TableOptions(const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions options;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // Every state change reads the run and job records it checks, and most SST files
  // (several overlapping ones at level 0) do not hold the key looked up: a Bloom
  // filter (10 bits a key, about 1% false positives) skips them without reading their
  // index and data blocks.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

// Every table's column family, then the default one. `present` (for a reader of a store
// an older orch wrote, which lacks the newer tables): only those it holds.
std::vector<rocksdb::ColumnFamilyDescriptor> Families(
    const std::vector<std::string>* present = nullptr) {
  rocksdb::ColumnFamilyOptions options = TableOptions(rocksdb::NewLRUCache(kBlockCacheSize));
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (int t = 0; t < kTableCount; ++t) {
    std::string name(TableName(static_cast<Table>(t)));
    if (present && std::find(present->begin(), present->end(), name) == present->end()) continue;
    families.emplace_back(std::move(name), options);
  }
  // Every RocksDB database has the default family and must open it, although the
  // store keeps nothing there.
  families.emplace_back(rocksdb::kDefaultColumnFamilyName, options);
  return families;
}

// Handles by table (nullptr for a table the store lacks), then the default family's.
std::vector<rocksdb::ColumnFamilyHandle*> ByTable(
    const std::vector<rocksdb::ColumnFamilyDescriptor>& opened,
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
  std::vector<rocksdb::ColumnFamilyHandle*> by_table(kTableCount + 1, nullptr);
  for (size_t i = 0; i < opened.size() && i < handles.size(); ++i) {
    size_t slot = kTableCount;  // the default family
    for (int t = 0; t < kTableCount; ++t) {
      if (opened[i].name == TableName(static_cast<Table>(t))) slot = static_cast<size_t>(t);
    }
    by_table[slot] = handles[i];
  }
  return by_table;
}

rocksdb::WALRecoveryMode RecoveryMode(WalTail tail) {
  switch (tail) {
    case WalTail::kRefuse:
      return rocksdb::WALRecoveryMode::kAbsoluteConsistency;
    case WalTail::kDropIncomplete:
      return rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
    case WalTail::kStopAtDamage:
      return rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    case WalTail::kSkipDamage:
      return rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
  }
  return rocksdb::WALRecoveryMode::kAbsoluteConsistency;
}

// `log_dir`: where RocksDB's LOG goes (created); empty: nowhere.
rocksdb::DBOptions DbOptions(const DbOpenSettings& settings, const std::string& log_dir) {
  rocksdb::DBOptions options;
  options.create_if_missing = settings.role == DbRole::kPrimary && settings.create_if_missing;
  // A store an older orch wrote gains the newer tables when a writer opens it.
  options.create_missing_column_families = settings.role == DbRole::kPrimary;
  options.IncreaseParallelism(2);
  // Opening a store loads each table's SST files with this many threads, started and
  // joined per table (16 by default: about 8 ms a table on 2 cores, most of the
  // coordinator's start-up). The store's tables hold few files each.
  options.max_file_opening_threads = 1;
  options.paranoid_checks = true;
  options.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(kMemtableBudget);
  options.wal_recovery_mode = RecoveryMode(settings.wal_tail);
  std::error_code ignored;
  if (!log_dir.empty()) std::filesystem::create_directories(log_dir, ignored);
  options.info_log = MakeInfoLog(log_dir.empty() ? "" : log_dir + "/LOG");
  if (settings.wal_messages) {
    options.info_log = MakeWalWarningTap(options.info_log, *settings.wal_messages);
  }
  options.listeners.push_back(std::make_shared<NoAutomaticRecovery>());
  return options;
}

// "DATA_DIR" for a store at DATA_DIR/rocksdb, else the store's own path.
std::string DataDirOf(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename() == "rocksdb" ? p.parent_path().string() : path;
}

Status DescribeOpenFailure(const std::string& path, const rocksdb::Status& s) {
  Status status = FromRocks(s);
  if (status.code() != StatusCode::kDataLoss) return status.WithContext("open store " + path);
  std::string data_dir = DataDirOf(path);
  // The damage a killed writer leaves: said as such, with who opens the store anyway.
  if (Result<std::string> cut = CutOffLastWalRecord(path); cut.ok() && !cut->empty()) {
    return Status(StatusCode::kDataLoss,
                  "open store " + path + ": it is damaged and was left as it is: " + *cut +
                      ", a write cut off when its process died (never acknowledged). `orch "
                      "coordinator` and `orch import` open it without that record (and say "
                      "so); or drop it now with `orch store recover " +
                      data_dir + "`");
  }
  return Status(StatusCode::kDataLoss,
                "open store " + path + ": it is damaged and was left as it is (" +
                    status.message() +
                    "). Nothing was rolled back; acknowledged data may be affected. Run `orch "
                    "store check " +
                    data_dir +
                    "` to see what is damaged; then restore a "
                    "backup with `orch store restore BACKUP " +
                    data_dir +
                    "`, or, for damage "
                    "in the WAL, keep what precedes it with `orch store recover " +
                    data_dir + "` (it names what it drops first)");
}

}  // namespace

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  std::string message = "rocksdb: " + s.ToString();
  if (s.IsCorruption()) return Status(StatusCode::kDataLoss, std::move(message));
  if (s.IsInvalidArgument()) return InvalidArgument(std::move(message));
  if (s.IsBusy() || s.IsTryAgain()) return Status(StatusCode::kUnavailable, std::move(message));
  return IoError(std::move(message));
}

RocksDb::~RocksDb() {
  // Column family handles must be released before the DB closes.
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    if (db && handle) db->DestroyColumnFamilyHandle(handle).PermitUncheckedError();
  }
  if (db) db->Close().PermitUncheckedError();
}

Status CheckNotOrphaned(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return Status::Ok();
  if (std::filesystem::exists(std::filesystem::path(path) / "CURRENT", error)) return Status::Ok();
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    std::string name = entry.path().filename().string();
    std::string ext = entry.path().extension().string();
    if (ext == ".sst" || ext == ".log" || name.rfind("MANIFEST-", 0) == 0) found.push_back(name);
  }
  if (found.empty()) return Status::Ok();
  std::string data_dir = DataDirOf(path);
  return Status(StatusCode::kFailedPrecondition,
                "open store " + path + ": it holds " + std::to_string(found.size()) +
                    " database files (e.g. " + found.front() +
                    ") but no CURRENT file; refusing to create a new, empty store over them "
                    "(that would delete them). Run `orch store check " +
                    data_dir +
                    "`; write CURRENT again from a sound MANIFEST with `orch store "
                    "recover " +
                    data_dir + "`, or restore a backup with `orch store restore BACKUP " +
                    data_dir + "` into an empty directory");
}

Result<std::unique_ptr<RocksDb>> OpenDb(const std::string& path, const DbOpenSettings& settings) {
  ORCH_RETURN_IF_ERROR(CheckNotOrphaned(path));
  std::string log_dir = settings.role == DbRole::kSecondary ? settings.secondary_dir : path;
  bool creating = settings.role == DbRole::kPrimary && settings.create_if_missing;
  std::error_code error;
  if (!creating && !std::filesystem::exists(std::filesystem::path(path) / "CURRENT", error)) {
    return NotFound("open store " + path + ": no store there (no CURRENT file)");
  }
  if (settings.role == DbRole::kReadOnly) log_dir.clear();  // writes nothing beside it
  rocksdb::DBOptions options = DbOptions(settings, log_dir);
  auto opened = std::make_unique<RocksDb>();
  rocksdb::DB* db = nullptr;
  rocksdb::Status s;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = Families();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  if (settings.role == DbRole::kPrimary) {
    s = rocksdb::DB::Open(options, path, families, &handles, &db);
  } else {
    // A reader cannot create the tables a store written by an older orch lacks: it opens
    // those there are and reads the others as empty.
    std::vector<std::string> present;
    s = rocksdb::DB::ListColumnFamilies(options, path, &present);
    if (s.ok()) {
      families = Families(&present);
      s = settings.role == DbRole::kReadOnly
              ? rocksdb::DB::OpenForReadOnly(options, path, families, &handles, &db)
              : rocksdb::DB::OpenAsSecondary(options, path, settings.secondary_dir, families,
                                             &handles, &db);
    }
  }
  // Owned before the status is checked, so that ~RocksDb closes whatever a failed
  // open left open.
  opened->db.reset(db);
  opened->handles = ByTable(families, handles);
  if (!s.ok()) return DescribeOpenFailure(path, s);
  if (settings.role == DbRole::kSecondary) {
    // A secondary starts from the primary's files as they were; catching up once
    // brings in what the primary wrote since.
    s = db->TryCatchUpWithPrimary();
    if (!s.ok()) return FromRocks(s).WithContext("catch up with the store at " + path);
  }
  return opened;
}

}  // namespace orch::store
