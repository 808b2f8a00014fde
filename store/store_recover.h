// `orch store recover`: brings a store whose WAL is damaged (a record cut off by a crash
// during a write, or overwritten bytes) back to the last state that replays cleanly, and
// says exactly what that drops.
//
// Opening refuses such a store (docs/store.md: nothing is rolled back silently). This is
// the explicit, loud way past that refusal, for a stopped coordinator's store:
//   1. nothing happens when the store opens strictly, or when its damage is not in the
//      WAL (a damaged SST or MANIFEST: restore a backup instead);
//   2. the records lost are found before anything changes: the WAL is replayed read-only
//      twice, once stopping at the first damaged record (what recovery keeps) and once
//      skipping damaged records (what lies beyond); every record of the second that the
//      first lacks or holds differently is lost, attributed to its experiment. The
//      damaged records themselves cannot be read; RocksDB's messages say how many bytes
//      of which WAL file they were;
//   3. a byte-for-byte copy of the store directory is saved beside it;
//   4. the store is opened once replaying up to the damage, the recovered state is
//      flushed to table files, and the store must then open strictly.
// Refused (FailedPrecondition, nothing changed) while another process holds the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::store {

// Records lost from one table of one experiment.
struct LostRecords {
  std::string experiment;  // empty: not attributable (events, hosts, signers)
  std::string table;       // "runs", "digests", ...
  uint64_t count = 0;
  std::vector<std::string> examples;  // up to 3 keys, "runs/r1"
};

struct RecoveryReport {
  std::string path;
  bool recovered = false;  // false: the store opened strictly; nothing was changed
  // RocksDB's own words about the damage: "000012.log: dropping 200 bytes; ...".
  std::vector<std::string> wal_messages;
  std::vector<LostRecords> lost;  // by experiment, then table
  uint64_t lost_total = 0;
  std::string saved_copy;  // the damaged store as it was; empty when nothing changed
  uint64_t records_kept = 0;
};

// Recovers the store at `path` (DATA_DIR/rocksdb), saving the damaged directory as
// `saved_copy` (must not exist). NotFound when there is no store at `path`.
Result<RecoveryReport> RecoverRocksDbStore(const std::string& path, const std::string& saved_copy);

}  // namespace orch::store
