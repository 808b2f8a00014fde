// The model files an agent offers: the SHA-256 of every regular file directly
// in each `model_dirs` entry (an entry may also name one file), as Hello's
// capabilities.model_hashes ("sha256:<hex>", sorted, no duplicates). The
// coordinator matches `[model] file` + `sha256` jobs on them (docs/agent.md,
// "Models").
//
// Hashing goes through the HashCache, so an unchanged file is read once per
// agent lifetime of the cache file; a new or changed 20 GB file is read in
// full, which is why AgentService runs scans on a worker thread. Files orch
// keeps next to models (sidecars, temporaries, caches) are skipped; an
// unreadable file is logged and skipped. Blocking; safe on any thread when
// `hashes` is.
#pragma once

#include <string>
#include <vector>

#include "fingerprint/hash_cache.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace orch::agent {

// The files a model_dirs entry stands for: itself when it is a regular file,
// else the regular files directly in it, by name. Bookkeeping files are left
// out. A missing entry has none.
std::vector<std::string> ModelFilesIn(const std::string& entry);

std::vector<std::string> ScanModelHashes(const std::vector<std::string>& model_dirs,
                                         fingerprint::HashCache& hashes, spdlog::logger& log);

// One file read again by VerifyModelFiles.
struct ModelFileCheck {
  std::string path;
  std::string sha256;    // of its bytes now; empty when it could not be read
  std::string trusted;   // what the hash cache held for its current identity; may be empty
  std::string recorded;  // what its NAME.sha256 sidecar records; may be empty
  std::string problem;   // empty: sound; else what is wrong, naming both hashes
};

// `orch agent --verify-models`: reads every model file in full again, ignoring
// the hash cache, those of `model_dirs` and of the model cache `cache_dir`
// (generated models, quantized variants), and compares each with the hash the
// cache trusted for its identity and with its sidecar. The fresh hashes are put
// in `hashes` (a lying entry is replaced; a file that no longer matches its
// sidecar is then caught by the next job that would use it). Blocking.
std::vector<ModelFileCheck> VerifyModelFiles(const std::vector<std::string>& model_dirs,
                                             const std::string& cache_dir,
                                             fingerprint::HashCache& hashes);

}  // namespace orch::agent
