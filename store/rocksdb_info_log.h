// Internal to store/: RocksDB's informational log as a plain append-only file that
// tolerates a full disk.
//
// RocksDB's own LOG writer (7.8) asserts when it is written again after one failed
// append, so with a full data disk the first log line after ENOSPC aborted the process
// ("Assertion `sync_without_flush_called_' failed"). This logger writes each line with
// one write(2) and drops lines the disk refuses; it never fails and never aborts.
#pragma once

#include <rocksdb/env.h>

#include <memory>
#include <string>
#include <vector>

namespace orch::store {

// A logger appending to `file` (created); when `file` cannot be opened it logs nothing.
std::shared_ptr<rocksdb::Logger> MakeInfoLog(const std::string& file);

// A logger that passes every line to `next` and also appends to `lines` those about
// the WAL's replay: RocksDB's "dropping N bytes" reports and where point-in-time
// recovery stopped. `lines` is borrowed and must outlive the logger's use (one open).
std::shared_ptr<rocksdb::Logger> MakeWalWarningTap(std::shared_ptr<rocksdb::Logger> next,
                                                   std::vector<std::string>& lines);

}  // namespace orch::store
