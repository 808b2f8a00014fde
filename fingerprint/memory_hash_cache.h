// MemoryHashCache: a HashCache that lives as long as the process (one `orch fingerprint`
// run, or an agent between restarts). Also the twin the hash cache contract runs against.
#pragma once

#include <map>
#include <string>

#include "fingerprint/hash_cache.h"

namespace orch::fingerprint {

class MemoryHashCache final : public HashCache {
 public:
  std::optional<std::string> Find(const FileIdentity& identity) const override;
  Status Put(const FileIdentity& identity, const std::string& sha256_hex) override;

  std::size_t size() const { return entries_.size(); }

 private:
  std::map<FileIdentity, std::string> entries_;
};

}  // namespace orch::fingerprint
