// HashCache: remembers the SHA-256 of files by identity, so a 20 GB model is hashed once.
//
// A file's identity is (path, size, mtime, inode, device, ctime): any rewrite, replacement
// or touch gives a new identity and therefore a fresh hash. ctime is what makes an in-place
// write with its size and mtime set back (utimensat) visible: every write, chmod or
// rename moves it and no program can set it back. A cache that loses entries only costs
// time, never correctness.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace orch::fingerprint {

struct FileIdentity {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;  // nanoseconds since the epoch
  std::uint64_t inode = 0;
  std::uint64_t device = 0;
  std::int64_t ctime_ns = 0;  // nanoseconds since the epoch; 0: unknown (never a real file's)
  friend auto operator<=>(const FileIdentity&, const FileIdentity&) = default;
};

class HashCache {
 public:
  virtual ~HashCache() = default;

  // The lowercase hex SHA-256 stored for exactly this identity, if any.
  virtual std::optional<std::string> Find(const FileIdentity& identity) const = 0;
  // Stores (or replaces) the hash for `identity`. An error means it was not kept.
  virtual Status Put(const FileIdentity& identity, const std::string& sha256_hex) = 0;
};

}  // namespace orch::fingerprint
