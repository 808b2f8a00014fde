// The KvEngine over RocksDB, and its recovery from failed writes (rocksdb_db.h).
//
// Why recovery replaces the WAL: after an append to the WAL fails (ENOSPC), RocksDB 7.8
// stops writes with a background error and marks that WAL's writer as failed; writing
// to it again asserts (`sync_without_flush_called_`) or, without assertions, fails
// forever. DB::Resume flushes the memtables and so starts a new WAL, but only when some
// memtable holds data; when none does (e.g. the first write after opening failed) the
// failed writer stays, so the engine then closes and reopens the database instead,
// dropping the incomplete record of the write that failed.
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include <mutex>
#include <utility>

#include "store/rocksdb_db.h"

namespace orch::store {
namespace {

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

Result<std::optional<std::string>> GetFrom(const RocksDb& db, Table table, std::string_view key) {
  if (db.handle(table) == nullptr) return std::optional<std::string>();  // an older store
  std::string value;
  rocksdb::Status s = db.db->Get(rocksdb::ReadOptions(), db.handle(table), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s).WithContext("get " + DescribeKey(table, key));
  return std::optional<std::string>(std::move(value));
}

Status ScanIn(const RocksDb& db, Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) {
  if (db.handle(table) == nullptr) return Status::Ok();  // a table an older store lacks
  std::unique_ptr<rocksdb::Iterator> it(
      db.db->NewIterator(rocksdb::ReadOptions(), db.handle(table)));
  for (it->Seek(ToSlice(start.empty() ? prefix : start)); it->Valid(); it->Next()) {
    std::string_view key = ToView(it->key());
    // Keys are sorted, so the first key without the prefix ends the range.
    if (key.substr(0, prefix.size()) != prefix) break;
    if (!visit(key, ToView(it->value()))) break;
  }
  return FromRocks(it->status()).WithContext("scan " + std::string(TableName(table)));
}

Result<std::optional<std::string>> LastKeyIn(const RocksDb& db, Table table) {
  if (db.handle(table) == nullptr) return std::optional<std::string>();
  std::unique_ptr<rocksdb::Iterator> it(
      db.db->NewIterator(rocksdb::ReadOptions(), db.handle(table)));
  it->SeekToLast();
  if (it->Valid()) return std::optional<std::string>(it->key().ToString());
  ORCH_RETURN_IF_ERROR(
      FromRocks(it->status()).WithContext("scan " + std::string(TableName(table))));
  return std::optional<std::string>();
}

// The number of the WAL that writes go to; 0 when unknown.
uint64_t CurrentWalNumber(rocksdb::DB& db) {
  std::unique_ptr<rocksdb::LogFile> wal;
  if (!db.GetCurrentWalFile(&wal).ok() || !wal) return 0;
  return wal->LogNumber();
}

Status BatchOf(const RocksDb& db, const KvBatch& batch, rocksdb::WriteBatch& out) {
  for (const KvBatch::Put& put : batch.puts) {
    rocksdb::Status s = out.Put(db.handle(put.table), ToSlice(put.key), ToSlice(put.value()));
    if (!s.ok()) return FromRocks(s).WithContext("build write batch");
  }
  return Status::Ok();
}

// A primary. Readers share the open database (shared_ptr: a read in progress keeps the
// instance it started on alive while a recovery replaces it).
class RocksDbEngine final : public KvEngine {
 public:
  RocksDbEngine(std::string path, std::unique_ptr<RocksDb> db)
      : path_(std::move(path)), db_(std::move(db)) {}

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    ORCH_ASSIGN_OR_RETURN(std::shared_ptr<RocksDb> db, Current());
    return GetFrom(*db, table, key);
  }

  Status Write(const KvBatch& batch, bool sync) override {
    std::lock_guard write_lock(write_mu_);
    if (stopped_) ORCH_RETURN_IF_ERROR(Recover());
    ORCH_ASSIGN_OR_RETURN(std::shared_ptr<RocksDb> db, Current());
    // Room for RocksDB's framing of each put and of the batch, so the buffer is not
    // grown again while it fills.
    rocksdb::WriteBatch write_batch(batch.bytes + 24 * batch.puts.size() + 64);
    ORCH_RETURN_IF_ERROR(BatchOf(*db, batch, write_batch));
    rocksdb::WriteOptions options;
    options.sync = sync;
    rocksdb::Status s = db->db->Write(options, &write_batch);
    // An invalid batch is refused before it reaches the WAL; any other failure may
    // have left a failed WAL writer behind (see the top of this file).
    if (!s.ok() && !s.IsInvalidArgument()) stopped_ = true;
    return FromRocks(s).WithContext("write batch");
  }

  Status Scan(Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) override {
    ORCH_ASSIGN_OR_RETURN(std::shared_ptr<RocksDb> db, Current());
    return ScanIn(*db, table, prefix, start, visit);
  }

  Result<std::optional<std::string>> LastKey(Table table) override {
    ORCH_ASSIGN_OR_RETURN(std::shared_ptr<RocksDb> db, Current());
    return LastKeyIn(*db, table);
  }

  // A failed sync stops writing like a failed write: the next write resumes first.
  Status Sync() override {
    std::lock_guard write_lock(write_mu_);
    if (stopped_) {
      return Status(StatusCode::kIoError,
                    "sync the WAL: the store stopped writing after a failed write");
    }
    ORCH_ASSIGN_OR_RETURN(std::shared_ptr<RocksDb> db, Current());
    rocksdb::Status s = db->db->SyncWAL();
    if (!s.ok()) stopped_ = true;
    return FromRocks(s).WithContext("sync the WAL");
  }

 private:
  Result<std::shared_ptr<RocksDb>> Current() {
    std::lock_guard lock(db_mu_);
    if (db_) return db_;
    return Status(StatusCode::kUnavailable,
                  "store " + path_ + " is closed while it recovers from a failed write: " +
                      reopen_error_.message());
  }

  // Called with write_mu_ held after a write failed: resumes, or reopens when the
  // failed WAL is still the current one. OK: writes may go on.
  Status Recover() {
    std::shared_ptr<RocksDb> db;
    {
      std::lock_guard lock(db_mu_);
      db = db_;
    }
    if (db) {
      uint64_t failed_wal = CurrentWalNumber(*db->db);
      Status resumed = FromRocks(db->db->Resume());
      if (!resumed.ok()) return StillStopped(resumed);
      if (failed_wal != 0 && CurrentWalNumber(*db->db) != failed_wal) {
        stopped_ = false;
        return Status::Ok();
      }
    }
    return Reopen(std::move(db));
  }

  Status Reopen(std::shared_ptr<RocksDb> db) {
    {
      std::lock_guard lock(db_mu_);
      db_.reset();
    }
    db.reset();  // closes it unless a read still holds it (then the open below fails)
    Result<std::unique_ptr<RocksDb>> reopened =
        OpenDb(path_, DbOpenSettings{.wal_tail = WalTail::kDropIncomplete});
    std::lock_guard lock(db_mu_);
    if (!reopened.ok()) {
      reopen_error_ = reopened.status();
      return StillStopped(reopened.status());
    }
    db_ = std::move(reopened).value();
    stopped_ = false;
    return Status::Ok();
  }

  static Status StillStopped(const Status& why) {
    return Status(
        why.code() == StatusCode::kDataLoss ? StatusCode::kDataLoss : StatusCode::kIoError,
        "the store stopped writing after a failed write and cannot resume yet "
        "(free disk space; the next write retries): " +
            why.message());
  }

  const std::string path_;
  std::mutex write_mu_;   // one write or recovery at a time
  bool stopped_ = false;  // guarded by write_mu_: the last write failed
  std::mutex db_mu_;
  std::shared_ptr<RocksDb> db_;  // guarded by db_mu_; null while a reopen failed
  Status reopen_error_;          // guarded by db_mu_
};

class ReadOnlyRocksDbEngine final : public KvEngine {
 public:
  explicit ReadOnlyRocksDbEngine(std::unique_ptr<RocksDb> db) : db_(std::move(db)) {}

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    return GetFrom(*db_, table, key);
  }
  Status Sync() override { return Status::Ok(); }  // writes nothing
  Status Write(const KvBatch&, bool) override {
    return Status(StatusCode::kFailedPrecondition, "the store was opened only to read it");
  }
  Status Scan(Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) override {
    return ScanIn(*db_, table, prefix, start, visit);
  }
  Result<std::optional<std::string>> LastKey(Table table) override {
    return LastKeyIn(*db_, table);
  }

 private:
  std::unique_ptr<RocksDb> db_;
};

}  // namespace

std::unique_ptr<KvEngine> MakeRocksDbEngine(std::string path, std::unique_ptr<RocksDb> db) {
  return std::make_unique<RocksDbEngine>(std::move(path), std::move(db));
}

std::unique_ptr<KvEngine> MakeReadOnlyRocksDbEngine(std::unique_ptr<RocksDb> db) {
  return std::make_unique<ReadOnlyRocksDbEngine>(std::move(db));
}

}  // namespace orch::store
