// `orch store recover`: brings a store whose WAL is damaged (a record cut off by a crash
// during a write, overwritten bytes, a WAL cut short) or whose CURRENT file is missing
// back to a state that opens strictly, and says exactly what that drops.
//
// Opening refuses such a store (docs/store.md: nothing is rolled back silently). This is
// the explicit, loud way past that refusal, for a stopped coordinator's store:
//   1. nothing happens when the store opens strictly, or when its damage is not in the
//      WAL or CURRENT (a damaged SST or MANIFEST: restore a backup instead);
//   2. a missing CURRENT is written again, naming the newest MANIFEST-NNNNNN, only after
//      that MANIFEST reads completely (every record's checksum, no cut-off end) and a
//      trial open of the store through it (hard links, read-only) succeeds; refused, with
//      nothing changed, when there is no MANIFEST, the newest does not read or open, or an
//      older one opens too (which CURRENT named cannot be told);
//   3. the records lost are found before anything changes. Damage in the newest WAL, or
//      wherever replaying up to it gives a consistent store: the WAL is replayed read-only
//      twice, once stopping at the first damaged record (what recovery keeps) and once
//      skipping damaged records (what lies beyond); every record of the second that the
//      first lacks or holds differently is lost, attributed to its experiment. Damage in
//      an older WAL whose later writes already reached table files (so no earlier point
//      is consistent): every sound record is replayed, nothing readable is dropped. The
//      damaged records themselves cannot be read: each damaged WAL is named with the
//      bytes RocksDB could not read and the sequence numbers of the writes they held
//      (one per record written), found from the sound records around them;
//   4. a byte-for-byte copy of the store directory is saved beside it (before CURRENT is
//      written, too); each damaged WAL is named in it;
//   5. the store is opened once replaying as found in 3, the recovered state is flushed
//      to table files, and the store must then open strictly.
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

// One WAL file that did not replay completely.
struct DamagedWal {
  std::string file;      // "000012.log"
  std::string saved_as;  // the damaged file as it was, in the saved copy
  bool newest = false;   // the WAL the store wrote to last
  uint64_t unreadable_bytes = 0;
  // The writes the damaged bytes held, found from the sequence numbers (one per record
  // written) missing between the sound records around the damage: how many, the first
  // and the last. A write to a table flushed since is in its table file, not lost. All 0
  // when no sound record follows the damage to tell (the end of the newest WAL).
  uint64_t unreadable_writes = 0;
  uint64_t unreadable_first = 0;
  uint64_t unreadable_last = 0;
};

enum class Replay {
  kUpToTheDamage,     // a point in time: readable records beyond the damage are dropped
  kEverySoundRecord,  // damage in an older WAL: only the damaged records are dropped
};

struct RecoveryReport {
  std::string path;
  bool recovered = false;  // false: the store opened strictly; nothing was changed
  // Set when CURRENT was missing and was written again: the MANIFEST it names.
  std::string current_restored;
  Replay replay = Replay::kUpToTheDamage;
  std::vector<DamagedWal> damaged_wals;  // by file number
  // RocksDB's own words about the damage: "000012.log: dropping 200 bytes; ...".
  std::vector<std::string> wal_messages;
  std::vector<LostRecords> lost;  // readable records dropped, by experiment, then table
  uint64_t lost_total = 0;
  std::string saved_copy;  // the damaged store as it was; empty when nothing changed
  uint64_t records_kept = 0;
};

// Recovers the store at `path` (DATA_DIR/rocksdb), saving the damaged directory as
// `saved_copy` (must not exist; `saved_copy`.trial is used and removed while a missing
// CURRENT is checked). NotFound when there is no store at `path`.
Result<RecoveryReport> RecoverRocksDbStore(const std::string& path, const std::string& saved_copy);

}  // namespace orch::store
