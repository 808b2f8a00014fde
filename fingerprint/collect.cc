#include "fingerprint/collect.h"

#include <set>

namespace orch::fingerprint {
namespace {

ModelFacts ProbeModel(FileHasher& hasher, const std::string& path) {
  ModelFacts model;
  model.path = path;
  Result<FileHash> hash = hasher.Hash(path);
  if (hash.ok()) {
    model.sha256 = Probed<std::string>::Known(hash->sha256);
    model.size_bytes = Probed<std::int64_t>::Known(static_cast<std::int64_t>(hash->size));
  } else {
    model.sha256 = Probed<std::string>::Unknown(hash.status().message());
    model.size_bytes = Probed<std::int64_t>::Unknown(hash.status().message());
  }
  return model;
}

}  // namespace

Fingerprint CollectFingerprint(const HostProbe& host, GpuProbe& gpus, EngineProbe& engines,
                               FileHasher& hasher, const FingerprintRequest& request) {
  Fingerprint fingerprint;
  fingerprint.host = host.Probe();
  fingerprint.gpu = gpus.Probe();
  std::set<std::string> names;
  for (const EngineSpec& spec : request.engines) {
    ORCH_CHECK(names.insert(spec.name).second) << "duplicate engine name " << spec.name;
    fingerprint.engines.push_back(engines.Probe(spec));
  }
  for (const std::string& path : request.models) {
    fingerprint.models.push_back(ProbeModel(hasher, path));
  }
  return fingerprint;
}

}  // namespace orch::fingerprint
