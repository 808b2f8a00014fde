#include "fingerprint/map_commit_resolver.h"

namespace orch::fingerprint {

void MapCommitResolver::Set(const std::string& directory, Result<CheckoutState> result) {
  states_.insert_or_assign(directory, std::move(result));
}

Result<CheckoutState> MapCommitResolver::Resolve(const std::string& directory) {
  auto it = states_.find(directory);
  if (it == states_.end()) return NotFound("not a git repository: " + directory);
  return it->second;
}

}  // namespace orch::fingerprint
