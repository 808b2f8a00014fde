// GpuProbe: the GPUs and their driver, from vendor tools run through a CommandRunner and
// from /proc/driver/nvidia/version below a root.
//
// NVIDIA: `nvidia-smi --query-gpu=... --format=csv,noheader` for the devices and
// `nvidia-smi -q -d COMPUTE` for the CUDA version. AMD: `rocm-smi ... --json`. A tool that
// is absent means no GPUs of that vendor, not an error; a tool that fails or prints
// something unparsable leaves cuda_version / rocm_driver_version unknown with the reason.
#pragma once

#include "fingerprint/command_runner.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/root_fs.h"

namespace orch::fingerprint {

class GpuProbe final {
 public:
  // Both are borrowed and must outlive the probe.
  GpuProbe(const RootFs& root, CommandRunner& runner) : root_(root), runner_(runner) {}

  GpuSection Probe();

 private:
  void ProbeNvidia(GpuSection& section);
  void ProbeAmd(GpuSection& section);

  const RootFs& root_;
  CommandRunner& runner_;
};

}  // namespace orch::fingerprint
