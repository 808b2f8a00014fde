// CommitResolver: which commit a source checkout is at, and whether it has local edits.
#pragma once

#include <string>

#include "base/status.h"
#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

class CommitResolver {
 public:
  virtual ~CommitResolver() = default;

  // The state of the working tree at `directory` (its top level or any folder inside).
  // Errors: NotFound "not a git repository: <directory>" when no repository contains
  // it; FailedPrecondition when the repository has no commit yet; other codes for
  // repositories that cannot be read. Reads only; never changes the repository.
  virtual Result<CheckoutState> Resolve(const std::string& directory) = 0;
};

}  // namespace orch::fingerprint
