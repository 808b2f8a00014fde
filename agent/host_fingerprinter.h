// HostFingerprinter: the agent's host fingerprint (docs/fingerprint.md), with its
// configured driver executables as the engines, as canonical JSON: once at start,
// then again every AgentCoreOptions::fingerprint_check (60 s by default) on the
// agent's worker thread, so that an upgraded driver, GPU driver or glibc is
// announced with a new Hello.
//
// What each call re-reads: the host files (/proc/cpuinfo, /proc/meminfo, the
// kernel and OS release, the glibc banner: fingerprint/host_probe.h) and the GPU
// tools' answers (nvidia-smi, rocm-smi: fingerprint/gpu_probe.h), which are small;
// of the driver executables it re-reads only those whose (path, size, mtime,
// inode, device) changed since this fingerprinter last hashed them: the hashes
// live in `cache` for the life of the fingerprinter, and each unchanged file costs
// one stat.
//
// Borrows everything it is given (it must outlive the fingerprinter). Not
// thread-safe: one caller at a time (the loop before it starts, then the worker).
#pragma once

#include <string>
#include <vector>

#include "agent/config.h"
#include "fingerprint/command_runner.h"
#include "fingerprint/commit_resolver.h"
#include "fingerprint/engine_probe.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/gpu_probe.h"
#include "fingerprint/hash_cache.h"
#include "fingerprint/host_probe.h"
#include "fingerprint/root_fs.h"

namespace orch::agent {

class HostFingerprinter final {
 public:
  HostFingerprinter(const fingerprint::RootFs& root, fingerprint::CommandRunner& runner,
                    fingerprint::CommitResolver& resolver, fingerprint::HashCache& cache,
                    const std::vector<DriverConfig>& drivers);

  // The fingerprint now, as canonical JSON. Never fails: unknowns carry reasons.
  std::string Json();

 private:
  fingerprint::FileHasher hasher_;
  fingerprint::HostProbe host_;
  fingerprint::GpuProbe gpus_;
  fingerprint::EngineProbe engines_;
  std::vector<fingerprint::EngineSpec> specs_;
};

}  // namespace orch::agent
