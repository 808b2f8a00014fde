#include "store/store_backup.h"

#include <rocksdb/env.h>
#include <rocksdb/utilities/backup_engine.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "store/rocksdb_db.h"

namespace orch::store {
namespace {

Result<std::unique_ptr<rocksdb::BackupEngine>> OpenBackups(const std::string& backup_dir) {
  rocksdb::BackupEngine* engine = nullptr;
  rocksdb::IOStatus s = rocksdb::BackupEngine::Open(
      rocksdb::Env::Default(), rocksdb::BackupEngineOptions(backup_dir), &engine);
  std::unique_ptr<rocksdb::BackupEngine> owned(engine);
  if (!s.ok()) return FromRocks(s).WithContext("open backups in " + backup_dir);
  return owned;
}

bool IsMissingOrEmpty(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return true;
  return std::filesystem::is_directory(path, error) && std::filesystem::is_empty(path, error);
}

}  // namespace

Result<BackupSummary> BackupRocksDbStore(const std::string& path, const std::string& backup_dir,
                                         const std::string& scratch_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return NotFound("no store at " + path);
  ORCH_ASSIGN_OR_RETURN(
      std::unique_ptr<RocksDb> db,
      OpenDb(path, DbOpenSettings{.role = DbRole::kSecondary, .secondary_dir = scratch_dir}));
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<rocksdb::BackupEngine> backups, OpenBackups(backup_dir));
  rocksdb::CreateBackupOptions options;
  options.flush_before_backup = false;  // a secondary cannot flush; the WAL is copied
  rocksdb::BackupID id = 0;
  rocksdb::IOStatus s = backups->CreateNewBackup(options, db->db.get(), &id);
  if (!s.ok()) return FromRocks(s).WithContext("back up " + path + " to " + backup_dir);
  s = backups->VerifyBackup(id, /*verify_with_checksum=*/true);
  if (!s.ok())
    return FromRocks(s).WithContext("verify backup " + std::to_string(id) + " in " + backup_dir);
  rocksdb::BackupInfo info;
  rocksdb::Status read = backups->GetBackupInfo(id, &info);
  if (!read.ok()) return FromRocks(read).WithContext("read backup " + std::to_string(id));
  return BackupSummary{id, info.size, info.number_files};
}

Status RestoreRocksDbStore(const std::string& backup_dir, const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(backup_dir, error)) {
    return NotFound("no backups in " + backup_dir + " (it is not a directory)");
  }
  if (!IsMissingOrEmpty(path)) {
    return Status(StatusCode::kFailedPrecondition,
                  "restore into " + path +
                      ": it exists and is not empty; nothing was "
                      "overwritten. Move it aside (or restore into a new data directory) first");
  }
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<rocksdb::BackupEngine> backups, OpenBackups(backup_dir));
  std::vector<rocksdb::BackupInfo> infos;
  backups->GetBackupInfo(&infos);
  if (infos.empty()) return NotFound("no backups in " + backup_dir);
  std::filesystem::create_directories(path, error);
  if (error) return IoError("restore into " + path + ": create it: " + error.message());
  rocksdb::IOStatus s = backups->RestoreDBFromLatestBackup(path, path);
  if (!s.ok()) return FromRocks(s).WithContext("restore " + backup_dir + " into " + path);
  {
    Result<std::unique_ptr<RocksDb>> once =
        OpenDb(path, DbOpenSettings{.wal_tail = WalTail::kDropIncomplete});
    if (!once.ok()) return once.status().WithContext("open the restored store");
  }
  Result<std::unique_ptr<RocksDb>> strict = OpenDb(path, DbOpenSettings{});
  if (!strict.ok()) return strict.status().WithContext("open the restored store");
  return Status::Ok();
}

}  // namespace orch::store
