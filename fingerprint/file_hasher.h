// FileHasher: SHA-256 of a file's contents, through a HashCache keyed by the file's
// identity (fingerprint/hash_cache.h), so an unchanged file is read once.
#pragma once

#include <string>

#include "base/status.h"
#include "fingerprint/hash_cache.h"

namespace orch::fingerprint {

struct FileHash {
  std::string sha256;  // lowercase hex
  std::uint64_t size = 0;
};

// The identity of the file at `path` now (stat). Errors: NotFound, IoError.
Result<FileIdentity> CurrentIdentity(const std::string& path);

class FileHasher final {
 public:
  // `cache` is borrowed and must outlive the hasher.
  explicit FileHasher(HashCache& cache) : cache_(cache) {}

  // Hashes `path` unless the cache knows its current identity. The result is stored in
  // the cache only when the file's identity did not change while it was read. Failing
  // to store is ignored (it only costs time later).
  // Errors: NotFound, IoError (unreadable, not a regular file).
  Result<FileHash> Hash(const std::string& path);

  // Files this hasher read in full (cache misses): what the cache saved is visible.
  std::uint64_t files_read() const { return files_read_; }

 private:
  HashCache& cache_;
  std::uint64_t files_read_ = 0;
};

}  // namespace orch::fingerprint
