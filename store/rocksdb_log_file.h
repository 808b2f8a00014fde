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

}  // namespace orch::store
