#include "agent/model_resolver.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/model_inventory.h"
#include "base/sha256.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"
#include "model/atomic_file.h"
#include "model/synth_model.h"
#include "model/synth_recipe.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSidecarSuffix = ".sha256";

std::string Lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The hash a sidecar records (first word of its first line), if well-formed.
std::optional<std::string> ReadSidecar(const std::string& path) {
  std::ifstream in(path);
  std::string hex;
  if (!(in >> hex) || !IsSha256Hex(hex)) return std::nullopt;
  return Lowercase(hex);
}

fingerprint::FileIdentity IdentityOf(const std::string& path, const struct stat& info) {
  return fingerprint::FileIdentity{
      path, static_cast<std::uint64_t>(info.st_size),
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec,
      info.st_ino, info.st_dev};
}

// Reads the whole file, bypassing any cache.
Result<std::string> HashUncached(const std::string& path) {
  fingerprint::MemoryHashCache empty;
  ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash hash, fingerprint::FileHasher(empty).Hash(path));
  return hash.sha256;
}

}  // namespace

ModelResolver::ModelResolver(ModelResolverOptions options, fingerprint::HashCache& hashes,
                             spdlog::logger& log)
    : options_(std::move(options)), hashes_(hashes), log_(log) {}

Result<ResolvedModel> ModelResolver::Resolve(const std::string& requirement) {
  if (requirement.empty()) return ResolvedModel{};
  Result<ResolvedModel> resolved = requirement.starts_with("synth:") ? ResolveSynth(requirement)
                                   : requirement.starts_with("sha256:")
                                       ? ResolveSha256(requirement.substr(7))
                                       : ResolveName(requirement);
  if (!resolved.ok()) return resolved.status().WithContext("model " + requirement);
  return resolved;
}

Result<ResolvedModel> ModelResolver::ResolveSynth(std::string_view recipe_text) {
  ORCH_ASSIGN_OR_RETURN(model::SynthRecipe recipe, model::ParseSynthRecipe(recipe_text));
  ORCH_RETURN_IF_ERROR(
      model::CheckSynthModelSize(recipe, options_.synth_max_bytes, "agent.synth_max_bytes"));
  std::error_code error;
  fs::create_directories(options_.cache_dir, error);
  if (error) {
    return IoError("model cache " + options_.cache_dir + ": " + error.message());
  }
  std::string path = (fs::path(options_.cache_dir) / model::SynthModelFileName(recipe)).string();
  if (std::optional<ResolvedModel> cached = VerifiedCacheFile(path)) return *cached;
  ORCH_RETURN_IF_ERROR(model::CheckFreeSpace(options_.cache_dir, fs::path(path).filename().string(),
                                             model::SynthModelBytes(recipe), options_.free_space));
  ORCH_ASSIGN_OR_RETURN(model::FileDigest digest, model::WriteSynthModelHashed(recipe, path));
  std::string sidecar = digest.sha256 + "  " + fs::path(path).filename().string() + "\n";
  ORCH_RETURN_IF_ERROR(
      model::WriteFileAtomically(path + std::string(kSidecarSuffix), sidecar).status());
  log_.info(fmt::runtime("model cache: generated {} ({} bytes, sha256 {}) for "
                         "synth:{}"),
            path, digest.bytes, digest.sha256, model::CanonicalRecipe(recipe));
  return ResolvedModel{path, digest.sha256};
}

std::optional<ResolvedModel> ModelResolver::VerifiedCacheFile(const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error)) return std::nullopt;
  std::optional<std::string> recorded = ReadSidecar(path + std::string(kSidecarSuffix));
  if (!recorded) {
    log_.warn(fmt::runtime("model cache: {} has no readable {} sidecar; "
                           "regenerating it"),
              path, kSidecarSuffix);
    return std::nullopt;
  }
  Result<std::string> actual = HashUncached(path);
  if (actual.ok() && *actual == *recorded) return ResolvedModel{path, *actual};
  log_.warn(fmt::runtime("model cache: {} does not match its recorded SHA-256 "
                         "(recorded {}, found {}); regenerating it"),
            path, *recorded, actual.ok() ? *actual : actual.status().message());
  return std::nullopt;
}

Result<ResolvedModel> ModelResolver::ResolveSha256(std::string_view hex) {
  if (!IsSha256Hex(hex)) {
    return InvalidArgument("expected 64 hex digits after sha256:, got \"" + std::string(hex) +
                           "\"");
  }
  std::string wanted = Lowercase(hex);
  fingerprint::FileHasher hasher(hashes_);
  std::vector<std::string> dirs = options_.model_dirs;
  dirs.push_back(options_.cache_dir);
  std::string corruption;  // of a model-cache file that had the hash
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    bool in_cache = d + 1 == dirs.size();
    for (const std::string& file : ModelFilesIn(dirs[d])) {
      Result<fingerprint::FileHash> hash = hasher.Hash(file);
      if (!hash.ok()) {
        log_.warn(fmt::runtime("model lookup: skipping {}"), hash.status().message());
        continue;
      }
      if (hash->sha256 != wanted) continue;
      if (in_cache && !StillHas(file, wanted, &corruption)) continue;
      return ResolvedModel{file, wanted};
    }
  }
  if (!corruption.empty()) {
    return Status(StatusCode::kDataLoss,
                  corruption + "; no other file here has SHA-256 " + wanted +
                      ", so the run is refused (it can run where the file is intact)");
  }
  log_.info(fmt::runtime("model lookup: no file with SHA-256 {} in model_dirs "
                         "or {}"),
            wanted, options_.cache_dir);
  return ResolvedModel{};
}

bool ModelResolver::StillHas(const std::string& path, const std::string& sha256,
                             std::string* corruption) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  Stamp stamp{
      info.st_dev, info.st_ino, static_cast<std::uint64_t>(info.st_size),
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec,
      static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1'000'000'000 + info.st_ctim.tv_nsec};
  auto known = verified_.find(path);
  if (known != verified_.end() && known->second == stamp) return true;
  Result<std::string> actual = HashUncached(path);
  if (actual.ok() && *actual == sha256) {
    verified_[path] = stamp;
    return true;
  }
  verified_.erase(path);
  std::string found = actual.ok() ? *actual : actual.status().message();
  if (actual.ok()) (void)hashes_.Put(IdentityOf(path, info), *actual);  // the truth
  std::error_code ignored;
  fs::remove(path, ignored);
  fs::remove(path + std::string(kSidecarSuffix), ignored);
  *corruption = "model cache file " + path + " no longer has SHA-256 " + sha256 + " (found " +
                found + "): it was corrupted or modified in place, and has been removed";
  log_.warn(fmt::runtime("model cache: {}"), *corruption);
  return false;
}

Result<ResolvedModel> ModelResolver::ResolveName(const std::string& name) {
  std::error_code error;
  std::string found;
  if (fs::path(name).is_absolute()) {
    if (fs::is_regular_file(name, error)) found = name;
  } else {
    for (const std::string& dir : options_.model_dirs) {
      fs::path candidate = fs::path(dir) / name;
      if (fs::is_regular_file(candidate, error)) {
        found = candidate.string();
        break;
      }
    }
  }
  if (found.empty()) return ResolvedModel{};
  ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash hash, fingerprint::FileHasher(hashes_).Hash(found));
  return ResolvedModel{found, hash.sha256};
}

}  // namespace orch::agent
