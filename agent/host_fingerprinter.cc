#include "agent/host_fingerprinter.h"

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/collect.h"

namespace orch::agent {

HostFingerprinter::HostFingerprinter(const fingerprint::RootFs& root,
                                     fingerprint::CommandRunner& runner,
                                     fingerprint::CommitResolver& resolver,
                                     fingerprint::HashCache& cache,
                                     const std::vector<DriverConfig>& drivers)
    : hasher_(cache), host_(root), gpus_(root, runner), engines_(hasher_, resolver) {
  for (const DriverConfig& driver : drivers) {
    specs_.push_back({.name = driver.name, .executable = driver.executable});
  }
}

std::string HostFingerprinter::Json() {
  return fingerprint::ToCanonicalJson(fingerprint::CollectFingerprint(
      host_, gpus_, engines_, hasher_, {.engines = specs_, .models = {}}));
}

}  // namespace orch::agent
