// HostProbe: reads the host facts (CPU, memory, NUMA, OS, kernel, glibc, container/VM)
// from files below a root directory. Never fails: every source that is missing or
// unreadable leaves its fields unknown with the reason.
//
// Sources, all relative to the root: /proc/cpuinfo, /proc/meminfo,
// /sys/devices/system/node/node<N>, /etc/os-release (else /usr/lib/os-release),
// /proc/sys/kernel/{osrelease,version}, libc.so.6 in the usual library directories (its
// banner gives the glibc version; reading the file rather than asking this process keeps
// the probe a function of the root), /.dockerenv, /run/.containerenv, /proc/1/cgroup,
// /sys/class/dmi/id/{sys_vendor,product_name}.
#pragma once

#include "fingerprint/fingerprint.h"
#include "fingerprint/root_fs.h"

namespace orch::fingerprint {

class HostProbe final {
 public:
  // `root` is borrowed and must outlive the probe.
  explicit HostProbe(const RootFs& root) : root_(root) {}

  HostFacts Probe() const;

 private:
  CpuFacts ProbeCpu() const;
  Probed<std::int64_t> ProbeMemory() const;
  Probed<std::int64_t> ProbeNumaNodes() const;
  OsFacts ProbeOs() const;
  Probed<std::string> ProbeGlibc() const;
  VirtualizationFacts ProbeVirtualization(const CpuFacts& cpu) const;

  const RootFs& root_;
};

}  // namespace orch::fingerprint
