#include "fingerprint/memory_hash_cache.h"

namespace orch::fingerprint {

std::optional<std::string> MemoryHashCache::Find(const FileIdentity& identity) const {
  auto it = entries_.find(identity);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Status MemoryHashCache::Put(const FileIdentity& identity, const std::string& sha256_hex) {
  entries_.insert_or_assign(identity, sha256_hex);
  return Status::Ok();
}

}  // namespace orch::fingerprint
