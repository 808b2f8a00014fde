// The real CommitResolver, backed by libgit2. "describe" uses tags (annotated or not),
// like `git describe --tags --always`; "dirty" counts staged and unstaged changes to
// tracked files (not untracked files), like `git describe --dirty`.
#pragma once

#include <memory>

#include "fingerprint/commit_resolver.h"

namespace orch::fingerprint {

// Initialises libgit2 for the resolver's lifetime. Not thread-safe; one per thread.
std::unique_ptr<CommitResolver> MakeLibgit2CommitResolver();

}  // namespace orch::fingerprint
