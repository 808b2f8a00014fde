#include "store/rocksdb_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <filesystem>
#include <utility>

#include "store/kv_store.h"
#include "store/rocksdb_db.h"
#include "store/rocksdb_log_file.h"

namespace orch::store {

Result<std::unique_ptr<Store>> OpenRocksDbStore(const std::string& path,
                                                const RocksDbOptions& options) {
  DbOpenSettings settings{.create_if_missing = options.create_if_missing};
  Result<std::unique_ptr<RocksDb>> opened = OpenDb(path, settings);
  if (!opened.ok() && opened.status().code() == StatusCode::kDataLoss &&
      options.dropped != nullptr) {
    // Refused: if the only damage is a last WAL record that the file's end cuts off (a
    // write its process died in, never acknowledged), open again dropping just that.
    Result<std::string> cut = CutOffLastWalRecord(path);
    if (cut.ok() && !cut->empty()) {
      settings.wal_tail = WalTail::kDropIncomplete;
      opened = OpenDb(path, settings);
      if (opened.ok()) {
        options.dropped->push_back(*cut +
                                   ": dropped that record, a write cut off when its "
                                   "process died (never acknowledged)");
      }
    }
  }
  if (!opened.ok()) return opened.status();
  std::unique_ptr<RocksDb> db = std::move(opened).value();
  KvStoreOptions store_options{.sync_chunks = options.sync_chunks,
                               .sync_state = options.sync_state};
  Result<std::unique_ptr<Store>> store =
      KvStore::Open(MakeRocksDbEngine(path, std::move(db)), store_options);
  if (!store.ok()) return store.status().WithContext("open store " + path);
  return store;
}

Result<std::unique_ptr<Store>> OpenRocksDbStoreForReading(const std::string& path,
                                                          const std::string& scratch_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    return NotFound("no store at " + path);
  }
  // A secondary, not a read-only open: it can read while a running coordinator
  // holds the store's LOCK and goes on writing.
  DbOpenSettings settings{.role = DbRole::kSecondary, .secondary_dir = scratch_dir};
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, settings));
  Result<std::unique_ptr<Store>> store =
      KvStore::Open(MakeReadOnlyRocksDbEngine(std::move(db)), KvStoreOptions{});
  if (!store.ok()) return store.status().WithContext("open store " + path);
  return store;
}

Status WriteRawValueForTesting(const std::string& path, std::string_view table,
                               std::string_view key, std::string_view value) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, DbOpenSettings{}));
  for (int t = 0; t < kTableCount; ++t) {
    if (TableName(static_cast<Table>(t)) != table) continue;
    rocksdb::WriteOptions options;
    options.sync = true;
    return FromRocks(db->db->Put(options, db->handles[t], rocksdb::Slice(key.data(), key.size()),
                                 rocksdb::Slice(value.data(), value.size())));
  }
  return InvalidArgument("no table named " + std::string(table));
}

Status DropTableForTesting(const std::string& path, std::string_view table) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, DbOpenSettings{}));
  for (int t = 0; t < kTableCount; ++t) {
    if (TableName(static_cast<Table>(t)) != table) continue;
    return FromRocks(db->db->DropColumnFamily(db->handles[t]));
  }
  return InvalidArgument("no table named " + std::string(table));
}

Status WriteAcrossTwoWalsForTesting(const std::string& path, std::string_view flushed_table,
                                    const std::function<Status(Store&)>& before,
                                    const std::function<Status(Store&)>& after) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db,
                        OpenDb(path, DbOpenSettings{.create_if_missing = true}));
  rocksdb::ColumnFamilyHandle* flushed = nullptr;
  for (int t = 0; t < kTableCount; ++t) {
    if (TableName(static_cast<Table>(t)) == flushed_table) flushed = db->handles[t];
  }
  if (flushed == nullptr) return InvalidArgument("no table named " + std::string(flushed_table));
  rocksdb::DB* raw = db->db.get();  // the engine below owns it; it outlives `store`
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        KvStore::Open(MakeRocksDbEngine(path, std::move(db)), KvStoreOptions{}));
  ORCH_RETURN_IF_ERROR(before(*store));
  rocksdb::FlushOptions flush;
  flush.wait = true;
  ORCH_RETURN_IF_ERROR(
      FromRocks(raw->Flush(flush, flushed)).WithContext("flush " + std::string(flushed_table)));
  return after(*store);
}

}  // namespace orch::store
