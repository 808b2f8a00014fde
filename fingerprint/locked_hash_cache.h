// LockedHashCache: a HashCache that serializes access to another one, so that a
// worker thread (hashing an agent's model folders) and the event loop (resolving
// a job's model) can share one persistent cache.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "fingerprint/hash_cache.h"

namespace orch::fingerprint {

class LockedHashCache final : public HashCache {
 public:
  // Borrows `inner`, which must outlive this cache.
  explicit LockedHashCache(HashCache& inner) : inner_(inner) {}

  std::optional<std::string> Find(const FileIdentity& identity) const override {
    std::lock_guard lock(mu_);
    return inner_.Find(identity);
  }
  Status Put(const FileIdentity& identity, const std::string& sha256_hex) override {
    std::lock_guard lock(mu_);
    return inner_.Put(identity, sha256_hex);
  }

 private:
  mutable std::mutex mu_;
  HashCache& inner_;
};

}  // namespace orch::fingerprint
