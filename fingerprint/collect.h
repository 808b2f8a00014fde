// CollectFingerprint: runs every probe once and assembles one Fingerprint.
#pragma once

#include <string>
#include <vector>

#include "fingerprint/engine_probe.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/gpu_probe.h"
#include "fingerprint/host_probe.h"

namespace orch::fingerprint {

struct FingerprintRequest {
  std::vector<EngineSpec> engines;  // names unique (checked: a duplicate is a bug)
  std::vector<std::string> models;  // model files to hash
};

// The probes and hasher are borrowed for the call. Never fails: unknowns carry reasons.
Fingerprint CollectFingerprint(const HostProbe& host, GpuProbe& gpus, EngineProbe& engines,
                               FileHasher& hasher, const FingerprintRequest& request);

}  // namespace orch::fingerprint
