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
#include "base/strings.h"
#include "fingerprint/file_hasher.h"
#include "model/atomic_file.h"
#include "model/synth_model.h"
#include "model/synth_recipe.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSidecarSuffix = ".sha256";

// The hash a sidecar records (first word of its first line), if well-formed.
std::optional<std::string> ReadSidecar(const std::string& path) {
  std::ifstream in(path);
  std::string hex;
  if (!(in >> hex) || !IsSha256Hex(hex)) return std::nullopt;
  return Lower(hex);
}

}  // namespace

ModelResolver::ModelResolver(ModelResolverOptions options, fingerprint::HashCache& hashes,
                             spdlog::logger& log)
    : options_(std::move(options)), hashes_(hashes), hasher_(hashes), log_(log) {}

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
  // Hashed as it was written: the hash cache learns it for the file's identity now, so
  // no later job reads it again until it changes.
  if (Result<fingerprint::FileIdentity> made = fingerprint::CurrentIdentity(path); made.ok()) {
    (void)hashes_.Put(*made, digest.sha256);
  }
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
  // Read only when its identity changed since it was made or last read.
  Result<fingerprint::FileHash> actual = hasher_.Hash(path);
  if (actual.ok() && actual->sha256 == *recorded) return ResolvedModel{path, actual->sha256};
  log_.warn(fmt::runtime("model cache: {} does not match its recorded SHA-256 "
                         "(recorded {}, found {}); regenerating it"),
            path, *recorded, actual.ok() ? actual->sha256 : actual.status().message());
  return std::nullopt;
}

Result<ResolvedModel> ModelResolver::ResolveSha256(std::string_view hex) {
  if (!IsSha256Hex(hex)) {
    return InvalidArgument("expected 64 hex digits after sha256:, got \"" + std::string(hex) +
                           "\"");
  }
  std::string wanted = Lower(hex);
  std::vector<std::string> dirs = options_.model_dirs;
  dirs.push_back(options_.cache_dir);
  std::string corruption;  // of a model-cache file that had the hash
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    bool in_cache = d + 1 == dirs.size();
    for (const std::string& file : ModelFilesIn(dirs[d])) {
      Result<fingerprint::FileHash> hash = hasher_.Hash(file);
      if (!hash.ok()) {
        log_.warn(fmt::runtime("model lookup: skipping {}"), hash.status().message());
        continue;
      }
      if (hash->sha256 == wanted) return ResolvedModel{file, wanted};
      if (in_cache) RemoveIfCorrupt(file, hash->sha256, wanted, &corruption);
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

void ModelResolver::RemoveIfCorrupt(const std::string& path, const std::string& found,
                                    const std::string& wanted, std::string* corruption) {
  std::optional<std::string> recorded = ReadSidecar(path + std::string(kSidecarSuffix));
  if (recorded != wanted) return;
  std::error_code ignored;
  fs::remove(path, ignored);
  fs::remove(path + std::string(kSidecarSuffix), ignored);
  *corruption = "model cache file " + path + " no longer has SHA-256 " + wanted + " (found " +
                found + "): it was corrupted or modified in place, and has been removed";
  log_.warn(fmt::runtime("model cache: {}"), *corruption);
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
  ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash hash, hasher_.Hash(found));
  return ResolvedModel{found, hash.sha256};
}

}  // namespace orch::agent
