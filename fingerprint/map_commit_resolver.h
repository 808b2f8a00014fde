// MapCommitResolver: the in-memory twin of CommitResolver. Directories are registered
// with the state (or error) to report; any other directory is NotFound exactly as the
// real resolver reports a folder outside every repository.
#pragma once

#include <map>
#include <string>

#include "fingerprint/commit_resolver.h"

namespace orch::fingerprint {

class MapCommitResolver final : public CommitResolver {
 public:
  void Set(const std::string& directory, Result<CheckoutState> result);

  Result<CheckoutState> Resolve(const std::string& directory) override;

 private:
  std::map<std::string, Result<CheckoutState>> states_;
};

}  // namespace orch::fingerprint
