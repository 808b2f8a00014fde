#include "cli/hash_cache_file.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "fingerprint/file_hash_cache.h"
#include "fingerprint/memory_hash_cache.h"
#include "cli/files.h"

namespace orch::cli {
std::string HashCachePath(const std::string& requested) {
  if (!requested.empty()) return requested;
  std::string base = !EnvOrEmpty("XDG_CACHE_HOME").empty() ? EnvOrEmpty("XDG_CACHE_HOME")
                     : !EnvOrEmpty("HOME").empty()         ? EnvOrEmpty("HOME") + "/.cache"
                                                           : "";
  if (base.empty()) return "";
  std::string path = base + "/orch/file-sha256.tsv";
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  return path;
}

std::unique_ptr<fingerprint::HashCache> OpenHashCache(const std::string& requested,
                                                      const std::string& command) {
  std::string path = HashCachePath(requested);
  if (path.empty()) return std::make_unique<fingerprint::MemoryHashCache>();
  Result<std::unique_ptr<fingerprint::HashCache>> cache = fingerprint::OpenFileHashCache(path);
  if (cache.ok()) return std::move(cache).value();
  std::cerr << command << ": hash cache not used: " << cache.status().message() << "\n";
  return std::make_unique<fingerprint::MemoryHashCache>();
}

}  // namespace orch::cli
