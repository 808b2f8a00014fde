// Internal to store/: a RocksDB log file (a WAL or a MANIFEST) read without RocksDB, to
// say exactly what of it reads and what does not.
//
// Both files use RocksDB's log format: 32 KiB blocks of fragments, each with a masked
// CRC-32C, a length and a type (full, first, middle, last; the recyclable variants carry
// the log number too), logical records made of one full fragment or first..last. A
// fragment whose checksum or length is wrong makes the rest of its block unreadable, as
// it does for RocksDB; a file that ends inside a fragment or record is incomplete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::store {

struct LogFileContents {
  std::vector<std::string> records;  // every sound logical record, in file order
  uint64_t unreadable_bytes = 0;     // 0: the file reads completely
  std::string first_damage;          // "offset 40960: checksum mismatch"; empty when none
};

// IoError naming the file when it cannot be read.
Result<LogFileContents> ReadLogFile(const std::string& file);

// A WAL record is a write batch: its first sequence number and how many it uses (one per
// put). False when the record is too short to be one.
struct WalBatch {
  uint64_t sequence = 0;
  uint32_t count = 0;
};
bool ParseWalBatch(const std::string& record, WalBatch& batch);

// The WAL files of the store in directory `path`, oldest first ("000012.log").
std::vector<std::string> WalFiles(const std::string& path);

// "000012.log ends inside its last record (the 1048576 bytes of it that were written)"
// when that is all the damage in the store's WALs: every older WAL reads
// completely, and the newest reads up to a record that the end of the file cuts off.
// That record is a write whose process died during it (a large write takes several
// system calls, and a kill can land between them); an acknowledged write was synced
// whole, so it is never that record. "" for anything else: no damage, or damage that
// is not only that.
Result<std::string> CutOffLastWalRecord(const std::string& path);

}  // namespace orch::store
