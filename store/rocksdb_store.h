// The durable Store: RocksDB with one column family per table of store/keys.h.
//
// Includes no RocksDB header; RocksDB links privately to orch_store.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace orch::store {

struct RocksDbOptions {
  bool create_if_missing = true;
  // AppendChunk returns only after its WriteBatch is in the synced WAL, so an
  // acknowledged chunk survives a power loss. Off only to measure what syncing costs.
  bool sync_chunks = true;
  // The same for every other write (plans, transitions, finished runs, events).
  bool sync_state = true;
  // When set, a store whose only damage is that its newest WAL ends inside the last
  // record (CutOffLastWalRecord: a write cut off when its process died) opens with that
  // record dropped, and what was dropped is appended here for the caller to report.
  // Unset: such a store is refused like any other damage. Borrowed.
  std::vector<std::string>* dropped = nullptr;
};

// Where a coordinator's data directory keeps its store: DATA_DIR/rocksdb. The coordinator
// opens it there; `orch report --data-dir DATA_DIR` reads it there.
inline std::string RocksDbPathInDataDir(const std::string& data_dir) {
  return data_dir.empty() || data_dir.back() == '/' ? data_dir + "rocksdb" : data_dir + "/rocksdb";
}

// Opens (or creates) the store in directory `path`. One process opens a path at a time
// (RocksDB's lock; a second open is IoError). Errors name the path.
Result<std::unique_ptr<Store>> OpenRocksDbStore(const std::string& path,
                                                const RocksDbOptions& options);

// Opens the store at `path` only to read it, also while its coordinator runs: a
// RocksDB secondary instance that keeps its own small files in `scratch_dir`
// (created; the caller removes it) and reads what the primary had written when it
// opened. Writes fail. NotFound when there is no store at `path`.
Result<std::unique_ptr<Store>> OpenRocksDbStoreForReading(const std::string& path,
                                                          const std::string& scratch_dir);

// Overwrites one raw value, bypassing the store's encoding: for repair tools and for
// tests that damage a record on purpose. The store at `path` must not be open.
Status WriteRawValueForTesting(const std::string& path, std::string_view table,
                               std::string_view key, std::string_view value);

// Drops one table's column family, as a store an older orch wrote would lack it: for
// tests. The store at `path` must not be open.
Status DropTableForTesting(const std::string& path, std::string_view table);

// Leaves the store at `path` with two WALs, as a busy store does when one table's memtable
// is flushed (RocksDB then starts a new WAL and keeps the older one for the tables that did
// not flush): opens it (created if missing; a store that already holds data has it flushed
// by the open), lets `before` write, flushes only `flushed_table`, lets `after` write and
// closes it without flushing. For tests.
Status WriteAcrossTwoWalsForTesting(const std::string& path, std::string_view flushed_table,
                                    const std::function<Status(Store&)>& before,
                                    const std::function<Status(Store&)>& after);

}  // namespace orch::store
