#include "agent/model_inventory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "fingerprint/file_hasher.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;

// Files orch itself keeps next to models: never models.
bool IsBookkeeping(const std::string& name) {
  return name.starts_with(".") || name.ends_with(".sha256") || name.ends_with(".tsv") ||
         name.find(".tmp.") != std::string::npos;
}

}  // namespace

std::vector<std::string> ModelFilesIn(const std::string& entry) {
  std::error_code error;
  if (fs::is_regular_file(entry, error)) return {entry};
  std::vector<std::string> files;
  for (const fs::directory_entry& file : fs::directory_iterator(entry, error)) {
    std::error_code ignored;
    if (file.is_regular_file(ignored) && !IsBookkeeping(file.path().filename().string())) {
      files.push_back(file.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> ScanModelHashes(const std::vector<std::string>& model_dirs,
                                         fingerprint::HashCache& hashes, spdlog::logger& log) {
  fingerprint::FileHasher hasher(hashes);
  std::set<std::string> found;
  for (const std::string& entry : model_dirs) {
    for (const std::string& file : ModelFilesIn(entry)) {
      Result<fingerprint::FileHash> hash = hasher.Hash(file);
      if (!hash.ok()) {
        log.warn(fmt::runtime("model scan: skipping {}"), hash.status().message());
        continue;
      }
      found.insert("sha256:" + hash->sha256);
    }
  }
  return {found.begin(), found.end()};
}

}  // namespace orch::agent
