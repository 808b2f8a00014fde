// Internal to store/: opening the RocksDB of a store (one column family per table of
// keys.h) with the options that keep acknowledged data safe, and its KvEngine.
//
// Included only by store/*.cc; it is the one header of store/ that includes RocksDB.
// Opening never creates a database over a directory that holds data files but no
// CURRENT (RocksDB would start empty and delete them), checks every read (paranoid
// checks) and replays the WAL with a recovery mode chosen by WalTail (docs/store.md).
#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/kv_engine.h"

namespace orch::store {

// RocksDB statuses as Status: Corruption is DataLoss, Busy/TryAgain Unavailable,
// InvalidArgument stays, the rest IoError. OK stays OK.
Status FromRocks(const rocksdb::Status& s);

enum class DbRole {
  kPrimary,    // reads and writes; holds the LOCK
  kReadOnly,   // replays the WAL in memory; no LOCK, nothing written to the directory
  kSecondary,  // follows a running primary, keeping its own files in secondary_dir
};

// What opening does with a WAL that ends inside a record.
enum class WalTail {
  // Refuse (kAbsoluteConsistency): any damage to any WAL, an incomplete last record
  // included, fails the open with DataLoss; nothing is rolled back.
  kRefuse,
  // Drop an incomplete last record (kTolerateCorruptedTailRecords): for the store's own
  // recovery from a failed write and for a restored backup, where that record is a
  // write that never returned OK. Damage elsewhere still fails the open.
  kDropIncomplete,
  // Replay up to the first damaged record and drop the rest (kPointInTimeRecovery):
  // only for `orch store recover`, which first saves a copy and names what is dropped.
  kStopAtDamage,
  // Replay every record that reads and skip damaged ones (kSkipAnyCorruptedRecords):
  // read-only, to learn which records lie beyond the damage; as a writer only for
  // `orch store recover` of damage in an older WAL, after naming what drops.
  kSkipDamage,
};

struct DbOpenSettings {
  DbRole role = DbRole::kPrimary;
  bool create_if_missing = false;  // kPrimary only
  WalTail wal_tail = WalTail::kRefuse;
  std::string secondary_dir = {};  // kSecondary only
  // When set, RocksDB's warnings about the WAL while opening (what it dropped, where
  // replay stopped) are appended here. Borrowed; must outlive the open.
  std::vector<std::string>* wal_messages = nullptr;
};

// Owns the DB and its column family handles (handles are released before the DB).
struct RocksDb {
  std::unique_ptr<rocksdb::DB> db;
  // Owned; index = Table, then the default family. A reader of a store an older orch
  // wrote has nullptr for the tables it lacks (read as empty).
  std::vector<rocksdb::ColumnFamilyHandle*> handles;

  ~RocksDb();
  rocksdb::ColumnFamilyHandle* handle(Table table) const {
    return handles[static_cast<size_t>(table)];
  }
};

// Opens the store at `path`. Errors name the path and, for damage, say what to do.
Result<std::unique_ptr<RocksDb>> OpenDb(const std::string& path, const DbOpenSettings& settings);

// FailedPrecondition when `path` holds RocksDB data files (*.sst, *.log, MANIFEST-*)
// but no CURRENT; OK for a missing or empty directory or a complete store.
Status CheckNotOrphaned(const std::string& path);

// The engine over an opened primary. After a write fails (a full disk), the next write
// first resumes the database (DB::Resume, reopening it when the failed WAL could not
// be replaced) and fails while that is impossible; reads keep working meanwhile.
std::unique_ptr<KvEngine> MakeRocksDbEngine(std::string path, std::unique_ptr<RocksDb> db);

// The engine over a read-only or secondary instance; writes fail.
std::unique_ptr<KvEngine> MakeReadOnlyRocksDbEngine(std::unique_ptr<RocksDb> db);

}  // namespace orch::store
