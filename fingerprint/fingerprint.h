// The fingerprint value types: what was true of a host and its engines when a run happened.
//
// Plain aggregates with no behaviour; probes fill them (host_probe.h, gpu_probe.h,
// engine_probe.h, collect.h), canonical_json.h turns them into bytes and an id, diff.h
// compares two of them. The field list and where each value comes from is documented in
// docs/fingerprint.md. Adding a field changes every fingerprint id: bump kSchemaVersion.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fingerprint/probed.h"

namespace orch::fingerprint {

inline constexpr int kSchemaVersion = 1;

struct CpuFacts {
  Probed<std::string> vendor;      // "GenuineIntel", "AuthenticAMD"
  Probed<std::string> model_name;  // "Intel(R) Xeon(R) Platinum 8480+"
  Probed<std::int64_t> family;     // cpuinfo "cpu family"
  Probed<std::int64_t> model;
  Probed<std::int64_t> stepping;
  Probed<std::string> microcode;            // "0x2b000590"
  Probed<std::vector<std::string>> flags;   // sorted, unique
  Probed<std::string> isa_level;            // "x86-64-v1" .. "x86-64-v4"
  Probed<std::vector<std::string>> avx512;  // AVX-512 subsets present, sorted
  Probed<std::vector<std::string>> amx;     // AMX features present, sorted
  Probed<std::int64_t> sockets;
  Probed<std::int64_t> cores;    // physical cores, all sockets
  Probed<std::int64_t> threads;  // logical processors
};

struct OsFacts {
  Probed<std::string> name;            // os-release PRETTY_NAME
  Probed<std::string> id;              // os-release "ID VERSION_ID", e.g. "debian 12"
  Probed<std::string> kernel_release;  // "6.1.0-18-amd64"
  Probed<std::string> kernel_version;  // "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1"
  Probed<std::string> glibc;           // "2.36 (Debian GLIBC 2.36-9+deb12u4)"
};

struct VirtualizationFacts {
  Probed<std::string> container;     // "docker", "podman", "kubernetes", "lxc", "none"
  Probed<bool> hypervisor;           // the CPU reports it runs under a hypervisor
  Probed<std::string> sys_vendor;    // DMI system vendor ("QEMU", "Amazon EC2", "Dell Inc.")
  Probed<std::string> product_name;  // DMI product name
};

struct HostFacts {
  CpuFacts cpu;
  Probed<std::int64_t> memory_bytes;  // MemTotal
  Probed<std::int64_t> numa_nodes;
  OsFacts os;
  VirtualizationFacts virtualization;
};

// One GPU. Values are kept as the vendor tool prints them, units included ("81559 MiB").
struct GpuFacts {
  std::string vendor;  // "nvidia" or "amd"
  Probed<std::string> name;
  Probed<std::string> uuid;
  Probed<std::string> driver_version;
  Probed<std::string> compute_capability;
  Probed<std::string> memory_total;
  Probed<std::string> vbios_version;
  Probed<std::string> pci_bus_id;
  Probed<std::string> max_sm_clock;
  Probed<std::string> power_limit;
  Probed<std::string> ecc_mode;
  Probed<std::string> persistence_mode;
  Probed<std::string> mig_mode;
};

struct GpuSection {
  Probed<std::string> nvidia_kernel_module;  // /proc/driver/nvidia/version, first line
  Probed<std::string> cuda_version;          // highest CUDA the driver supports
  Probed<std::string> rocm_driver_version;
  std::vector<GpuFacts> devices;  // in tool order; empty when no GPU tool
};

// State of a git working tree, as `git rev-parse HEAD`, `git branch --show-current`,
// `git describe --tags --always` and `git diff-index --quiet HEAD` would report it.
struct CheckoutState {
  std::string commit;  // 40 hex digits
  std::string branch;  // short name; empty when detached
  bool detached = false;
  std::string describe;  // nearest tag plus distance, or the abbreviated commit
  bool dirty = false;    // tracked files differ from HEAD; untracked files do not count
  friend bool operator==(const CheckoutState&, const CheckoutState&) = default;
};

struct CheckoutFacts {
  std::string path;
  Probed<CheckoutState> state;
};

// File name -> SHA-256 hex of each backend library in the engine's backend directory.
using LibraryHashes = std::map<std::string, Probed<std::string>>;

struct EngineFacts {
  std::string name;        // the driver name, unique within a fingerprint
  std::string executable;  // path as configured; empty when none was
  Probed<std::string> executable_sha256;
  std::map<std::string, std::string> metadata;  // version and build facts the driver gave
  std::string backend_dir;                      // empty when none was configured
  Probed<LibraryHashes> backend_libraries;
  std::vector<CheckoutFacts> checkouts;  // in configuration order
};

struct ModelFacts {
  std::string path;
  Probed<std::string> sha256;
  Probed<std::int64_t> size_bytes;
};

struct Fingerprint {
  HostFacts host;
  GpuSection gpu;
  std::vector<EngineFacts> engines;  // names unique
  std::vector<ModelFacts> models;
};

}  // namespace orch::fingerprint
