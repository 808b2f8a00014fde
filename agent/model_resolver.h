// ModelResolver: turns a job's model requirement into a file on this machine
// (docs/agent.md, "Models").
//
// Requirements come in three forms (docs/spec.md, "Jobs and requirements"):
//   synth:RECIPE  the recipe's generated GGUF, kept in the model cache as
//                 synth-<16 hex of SHA-256 of the canonical recipe>.gguf and
//                 generated (atomically) when missing. A sidecar FILE.sha256
//                 (`sha256sum` format) records its hash. Reuse compares the
//                 file's hash with the sidecar and regenerates it, with a
//                 warning, when they differ (or the sidecar is missing or
//                 unreadable). A recipe whose file would exceed synth_max_bytes
//                 is refused, and so is one whose file (plus a margin,
//                 model/free_space.h) would not fit in the cache's free space;
//                 both before a byte is written.
//   sha256:HEX    the first regular file in model_dirs, then the model cache,
//                 whose SHA-256 is HEX. None: not found. A model-cache file
//                 whose sidecar records HEX but whose bytes no longer have it
//                 is removed (with its sidecar) and, when no other file
//                 matches, the requirement is kDataLoss.
//   NAME          a file name looked up in model_dirs (first match wins), or an
//                 absolute path.
// "Not found" is not an error: the resolved path is empty and the driver
// answers model_missing.
//
// Every hash comes through the HashCache, keyed by the file's identity (path,
// size, mtime, inode, device, ctime; fingerprint/hash_cache.h): a file is read
// when it is made (a synth model is hashed as it is written) or first seen, and
// again only when its identity changed, which every write, rename and touch
// does (ctime cannot be set back). So reuse costs a stat, whatever the size.
//
// Hashing and generation run synchronously on the caller's thread (the
// agent's event loop): fine for generated models of a few MB and for cached
// hashes; hashing a multi-GB file the first time blocks the loop for its
// duration and should move to a worker pool.
//
// Not thread-safe. Two agents may share a cache folder: files are written to a
// temporary name and renamed, and equal recipes give equal bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/hash_cache.h"
#include "model/free_space.h"
#include "model/synth_model.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace orch::agent {

struct ResolvedModel {
  std::string path;    // absolute; empty when this machine has no such model
  std::string sha256;  // lowercase hex of the file at `path`; empty with it
};

struct ModelResolverOptions {
  std::vector<std::string> model_dirs;  // absolute
  std::string cache_dir;                // absolute; created on first use
  // The file `hashes` persists to (fingerprint/file_hash_cache.h), handed to drivers
  // (model.hash_cache) so they trust and add to the same hashes; empty: none.
  std::string hash_cache_file = {};
  // The largest synth model generated (agent.synth_max_bytes).
  std::uint64_t synth_max_bytes = model::kDefaultSynthMaxBytes;
  // The cache's free space, checked before a synth model is written.
  model::FreeSpaceReader free_space = model::StatvfsFreeSpace;
};

class ModelResolver final {
 public:
  // Borrows `hashes` and `log`, which must outlive the resolver.
  ModelResolver(ModelResolverOptions options, fingerprint::HashCache& hashes, spdlog::logger& log);

  // Errors name the requirement: kInvalidArgument for a malformed recipe or
  // hash or a recipe over synth_max_bytes, kIoError when its file would not
  // fit in the cache's free space, the cache cannot be written or a found file
  // cannot be read.
  Result<ResolvedModel> Resolve(const std::string& requirement);

  const std::string& cache_dir() const { return options_.cache_dir; }
  const std::string& hash_cache_file() const { return options_.hash_cache_file; }
  // Files this resolver read in full (the rest came from the hash cache).
  std::uint64_t files_hashed() const { return hasher_.files_read(); }

 private:
  Result<ResolvedModel> ResolveSynth(std::string_view recipe_text);
  Result<ResolvedModel> ResolveSha256(std::string_view hex);
  Result<ResolvedModel> ResolveName(const std::string& name);
  // The cached file at `path` when its sidecar vouches for it, else nullopt.
  std::optional<ResolvedModel> VerifiedCacheFile(const std::string& path);
  // Removes the model-cache file at `path` (bytes hashing to `found`) when its
  // sidecar records `wanted`: it was corrupted; `corruption` then says so.
  void RemoveIfCorrupt(const std::string& path, const std::string& found, const std::string& wanted,
                       std::string* corruption);

  ModelResolverOptions options_;
  fingerprint::HashCache& hashes_;
  fingerprint::FileHasher hasher_;  // through hashes_
  spdlog::logger& log_;
};

}  // namespace orch::agent
