#include "agent/model_inventory.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/sha256.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"

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

namespace {

std::string SidecarHash(const std::string& path) {
  std::ifstream in(path + ".sha256");
  std::string hex;
  if (!(in >> hex) || !IsSha256Hex(hex)) return "";
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return hex;
}

ModelFileCheck CheckOne(const std::string& path, fingerprint::HashCache& hashes) {
  ModelFileCheck check{path, "", "", SidecarHash(path), ""};
  Result<fingerprint::FileIdentity> identity = fingerprint::CurrentIdentity(path);
  if (identity.ok()) check.trusted = hashes.Find(*identity).value_or("");
  fingerprint::MemoryHashCache none;  // read in full, whatever is cached
  Result<fingerprint::FileHash> fresh = fingerprint::FileHasher(none).Hash(path);
  if (!fresh.ok()) {
    check.problem = "unreadable: " + fresh.status().message();
    return check;
  }
  check.sha256 = fresh->sha256;
  if (identity.ok()) (void)hashes.Put(*identity, check.sha256);  // the truth
  if (!check.trusted.empty() && check.trusted != check.sha256) {
    check.problem =
        "the hash cache trusted sha256 " + check.trusted + ", its bytes have " + check.sha256;
  } else if (!check.recorded.empty() && check.recorded != check.sha256) {
    check.problem =
        "its .sha256 sidecar records " + check.recorded + ", its bytes have " + check.sha256;
  }
  return check;
}

}  // namespace

std::vector<ModelFileCheck> VerifyModelFiles(const std::vector<std::string>& model_dirs,
                                             const std::string& cache_dir,
                                             fingerprint::HashCache& hashes) {
  std::vector<std::string> entries = model_dirs;
  if (!cache_dir.empty()) entries.push_back(cache_dir);
  std::vector<ModelFileCheck> checks;
  for (const std::string& entry : entries) {
    for (const std::string& file : ModelFilesIn(entry)) checks.push_back(CheckOne(file, hashes));
  }
  return checks;
}

}  // namespace orch::agent
