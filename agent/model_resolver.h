// ModelResolver: turns a job's model requirement into a file on this machine
// (docs/agent.md, "Models").
//
// Requirements come in three forms (docs/spec.md, "Jobs and requirements"):
//   synth:RECIPE  the recipe's generated GGUF, kept in the model cache as
//                 synth-<16 hex of SHA-256 of the canonical recipe>.gguf and
//                 generated (atomically) when missing. A sidecar FILE.sha256
//                 (`sha256sum` format) records its hash; every reuse hashes the
//                 file again and regenerates it, with a warning, when it does
//                 not match (or the sidecar is missing or unreadable). A
//                 recipe whose file would exceed synth_max_bytes is refused,
//                 and so is one whose file (plus a margin, model/free_space.h)
//                 would not fit in the cache's free space; both before a byte
//                 is written.
//   sha256:HEX    the first regular file in model_dirs, then the model cache,
//                 whose SHA-256 is HEX (hashes come through the HashCache, so
//                 an unchanged file is read once). None: not found. A file in
//                 the model cache (written by agents and drivers, so derived
//                 and replaceable) is read again before it is handed over
//                 unless this resolver already read it since it last changed:
//                 same size, mtime, inode, device and ctime, which every write
//                 and every touch moves and no program can set back. One that
//                 no longer has that hash is removed (with its sidecar) and,
//                 when no other file matches, the requirement is kDataLoss.
//   NAME          a file name looked up in model_dirs (first match wins), or an
//                 absolute path.
// "Not found" is not an error: the resolved path is empty and the driver
// answers model_missing.
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
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
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

 private:
  Result<ResolvedModel> ResolveSynth(std::string_view recipe_text);
  Result<ResolvedModel> ResolveSha256(std::string_view hex);
  Result<ResolvedModel> ResolveName(const std::string& name);
  // The cached file at `path` when its sidecar vouches for it, else nullopt.
  std::optional<ResolvedModel> VerifiedCacheFile(const std::string& path);
  // Whether the model-cache file at `path` still has SHA-256 `sha256` (read
  // again unless verified since it last changed). One that does not is
  // removed; `corruption` then says what was found.
  bool StillHas(const std::string& path, const std::string& sha256, std::string* corruption);

  // What identifies a file's current contents without reading it.
  struct Stamp {
    std::uint64_t device = 0, inode = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };

  ModelResolverOptions options_;
  fingerprint::HashCache& hashes_;
  spdlog::logger& log_;
  std::map<std::string, Stamp> verified_;  // model-cache files read since they changed
};

}  // namespace orch::agent
