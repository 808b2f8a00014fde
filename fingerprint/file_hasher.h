// FileHasher: SHA-256 of a file's contents, through a HashCache.
#pragma once

#include <string>

#include "base/status.h"
#include "fingerprint/hash_cache.h"

namespace orch::fingerprint {

struct FileHash {
  std::string sha256;  // lowercase hex
  std::uint64_t size = 0;
};

class FileHasher final {
 public:
  // `cache` is borrowed and must outlive the hasher.
  explicit FileHasher(HashCache& cache) : cache_(cache) {}

  // Hashes `path` unless the cache knows its current identity. The result is stored in
  // the cache only when the file's identity did not change while it was read. Failing
  // to store is ignored (it only costs time later).
  // Errors: NotFound, IoError (unreadable, not a regular file).
  Result<FileHash> Hash(const std::string& path);

 private:
  HashCache& cache_;
};

}  // namespace orch::fingerprint
