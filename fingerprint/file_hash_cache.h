// A HashCache persisted in one text file, so hashes survive across `orch` invocations.
//
// Format: one entry per line, tab-separated: sha256, size, mtime_ns, inode, device,
// ctime_ns, path (lines of the older form without ctime_ns are read as entries no file
// matches). Put appends a line with one write (the last line for an identity wins);
// malformed lines are skipped on open, so a torn final line from a crash loses one entry,
// nothing else. Paths holding a tab or newline are not stored. An open cache does not see
// lines other processes append after it was opened: an agent and the drivers it starts
// may share its file (each line is one short append; the worst case is a file hashed
// twice), but two long-lived writers should each have their own.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fingerprint/hash_cache.h"

namespace orch::fingerprint {

// Loads `path` (a missing file is an empty cache; its folder must exist).
// Errors: IoError when the file exists but cannot be read.
Result<std::unique_ptr<HashCache>> OpenFileHashCache(const std::string& path);

}  // namespace orch::fingerprint
