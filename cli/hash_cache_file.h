// The CLI's persistent file-hash cache, shared by `orch fingerprint` and `orch model hash`
// so a model hashed by one is not hashed again by the other (docs/fingerprint.md).
#pragma once

#include <memory>
#include <string>

#include "fingerprint/hash_cache.h"

namespace orch::cli {

// `requested`, or when empty $XDG_CACHE_HOME/orch/file-sha256.tsv (else
// ~/.cache/orch/file-sha256.tsv, creating the folder); empty when neither variable is set.
std::string HashCachePath(const std::string& requested);

// Opens the cache at HashCachePath(requested). When it cannot be opened the reason goes to
// stderr, prefixed with `command`, and an in-memory cache is returned: a cache only saves
// time.
std::unique_ptr<fingerprint::HashCache> OpenHashCache(const std::string& requested,
                                                      const std::string& command);

}  // namespace orch::cli
