// Backups of a store with RocksDB's BackupEngine, for `orch store backup` / `restore`.
//
// A backup is taken through a read-only secondary instance, so it works while a
// coordinator holds the store open; it holds what that coordinator had written when
// the backup began (its WAL copied as it was, a write in flight possibly cut off).
// Each backup is verified (file sizes and checksums) before it is reported done.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace orch::store {

struct BackupSummary {
  uint32_t id = 0;     // BackupEngine's id, 1, 2, ... within backup_dir
  uint64_t bytes = 0;  // size of the files this backup consists of
  uint32_t files = 0;
};

// Adds a backup of the store at `path` to `backup_dir` (created; earlier backups share
// unchanged files). `scratch_dir`: the secondary instance's own files (the caller
// removes it). NotFound when there is no store at `path`.
Result<BackupSummary> BackupRocksDbStore(const std::string& path, const std::string& backup_dir,
                                         const std::string& scratch_dir);

// Restores the latest backup in `backup_dir` into `path`, which must not exist or be
// empty (FailedPrecondition otherwise: nothing is overwritten). The restored store is
// then opened once, which drops an incomplete last WAL record of a write that was in
// flight when the backup was taken, and checked to open strictly.
Status RestoreRocksDbStore(const std::string& backup_dir, const std::string& path);

}  // namespace orch::store
