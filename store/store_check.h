// Verifying a stored store for `orch store check`: every block checksum (RocksDB's
// VerifyChecksum), the WAL replayed strictly, and every record decoded with codec.h,
// with each problem attributed to its experiment where the records say whose it is.
//
// Reads only: the store is opened read-only (no LOCK taken, nothing written), so it
// may run beside a coordinator, whose writes in flight may then show as an incomplete
// last WAL record; check a stopped coordinator's store for a verdict.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::store {

struct StoreProblem {
  std::string experiment;  // empty: the store as a whole, or no record says whose
  std::string where;       // "runs/r1", a file, or "open"
  std::string what;        // the error, naming the table/key/file
};

struct StoreCheckReport {
  std::string path;
  uint64_t records = 0;  // records read and decoded (digests and fingerprints counted)
  std::vector<StoreProblem> problems;
  bool ok() const { return problems.empty(); }
};

// NotFound when there is no store at `path`; damage, also damage that keeps the store
// from opening, is in the report.
Result<StoreCheckReport> CheckRocksDbStore(const std::string& path);

}  // namespace orch::store
