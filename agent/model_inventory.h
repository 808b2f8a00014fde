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

}  // namespace orch::agent
