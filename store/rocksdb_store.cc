#include "store/rocksdb_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "store/kv_engine.h"
#include "store/kv_store.h"

namespace orch::store {
namespace {

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  std::string message = "rocksdb: " + s.ToString();
  if (s.IsCorruption()) return Status(StatusCode::kDataLoss, std::move(message));
  if (s.IsInvalidArgument()) return InvalidArgument(std::move(message));
  if (s.IsBusy() || s.IsTryAgain()) return Status(StatusCode::kUnavailable, std::move(message));
  return IoError(std::move(message));
}

// Owns the DB and its column family handles (handles are released before the DB).
struct RocksDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // owned; index = Table, then default

  ~RocksDb() {
    for (rocksdb::ColumnFamilyHandle* handle : handles) {
      if (db && handle) db->DestroyColumnFamilyHandle(handle).PermitUncheckedError();
    }
    if (db) db->Close().PermitUncheckedError();
  }
};

// `secondary`: open as a RocksDB secondary instance keeping its own files there
// (read only, beside a primary that may be running); empty: the primary.
Result<std::unique_ptr<RocksDb>> OpenDb(const std::string& path, bool create_if_missing,
                                        const std::string& secondary = "") {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (int t = 0; t < kTableCount; ++t) {
    families.emplace_back(std::string(TableName(static_cast<Table>(t))),
                          rocksdb::ColumnFamilyOptions());
  }
  families.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions());
  auto opened = std::make_unique<RocksDb>();
  rocksdb::DB* db = nullptr;
  rocksdb::Status s =
      secondary.empty()
          ? rocksdb::DB::Open(db_options, path, families, &opened->handles, &db)
          : rocksdb::DB::OpenAsSecondary(db_options, path, secondary, families,
                                         &opened->handles, &db);
  opened->db.reset(db);
  if (!s.ok()) return FromRocks(s).WithContext("open store " + path);
  if (!secondary.empty()) {
    s = db->TryCatchUpWithPrimary();
    if (!s.ok()) return FromRocks(s).WithContext("catch up with the store at " + path);
  }
  return opened;
}

class RocksDbEngine final : public KvEngine {
 public:
  explicit RocksDbEngine(std::unique_ptr<RocksDb> db) : db_(std::move(db)) {}

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    std::string value;
    rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), Handle(table), ToSlice(key), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return FromRocks(s).WithContext("get " + DescribeKey(table, key));
    return std::optional<std::string>(std::move(value));
  }

  Status Write(const KvBatch& batch, bool sync) override {
    rocksdb::WriteBatch write_batch(batch.bytes + 24 * batch.puts.size() + 64);
    for (const KvBatch::Put& put : batch.puts) {
      rocksdb::Status s = write_batch.Put(Handle(put.table), ToSlice(put.key), ToSlice(put.value()));
      if (!s.ok()) return FromRocks(s).WithContext("build write batch");
    }
    rocksdb::WriteOptions options;
    options.sync = sync;
    return FromRocks(db_->db->Write(options, &write_batch)).WithContext("write batch");
  }

  Status Scan(Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(rocksdb::ReadOptions(), Handle(table)));
    for (it->Seek(ToSlice(start.empty() ? prefix : start)); it->Valid(); it->Next()) {
      std::string_view key = ToView(it->key());
      if (key.substr(0, prefix.size()) != prefix) break;
      if (!visit(key, ToView(it->value()))) break;
    }
    return FromRocks(it->status()).WithContext("scan " + std::string(TableName(table)));
  }

  Result<std::optional<std::string>> LastKey(Table table) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(rocksdb::ReadOptions(), Handle(table)));
    it->SeekToLast();
    if (it->Valid()) return std::optional<std::string>(it->key().ToString());
    ORCH_RETURN_IF_ERROR(FromRocks(it->status()).WithContext("scan " + std::string(TableName(table))));
    return std::optional<std::string>();
  }

 private:
  rocksdb::ColumnFamilyHandle* Handle(Table table) {
    return db_->handles[static_cast<size_t>(table)];
  }

  std::unique_ptr<RocksDb> db_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenRocksDbStore(const std::string& path,
                                                const RocksDbOptions& options) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, options.create_if_missing));
  KvStoreOptions store_options{.sync_chunks = options.sync_chunks,
                               .sync_state = options.sync_state};
  Result<std::unique_ptr<Store>> store =
      KvStore::Open(std::make_unique<RocksDbEngine>(std::move(db)), store_options);
  if (!store.ok()) return store.status().WithContext("open store " + path);
  return store;
}

Result<std::unique_ptr<Store>> OpenRocksDbStoreForReading(const std::string& path,
                                                          const std::string& scratch_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    return NotFound("no store at " + path);
  }
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, false, scratch_dir));
  Result<std::unique_ptr<Store>> store =
      KvStore::Open(std::make_unique<RocksDbEngine>(std::move(db)), KvStoreOptions{});
  if (!store.ok()) return store.status().WithContext("open store " + path);
  return store;
}

Status WriteRawValueForTesting(const std::string& path, std::string_view table,
                               std::string_view key, std::string_view value) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<RocksDb> db, OpenDb(path, false));
  for (int t = 0; t < kTableCount; ++t) {
    if (TableName(static_cast<Table>(t)) != table) continue;
    rocksdb::WriteOptions options;
    options.sync = true;
    return FromRocks(db->db->Put(options, db->handles[t], ToSlice(key), ToSlice(value)));
  }
  return InvalidArgument("no table named " + std::string(table));
}

}  // namespace orch::store
