#include "fingerprint/host_probe.h"

#include <algorithm>
#include <cctype>

#include "fingerprint/cpuinfo_parser.h"
#include "fingerprint/system_file_parsers.h"

namespace orch::fingerprint {
namespace {

// Where distributions put libc.so.6, most common first. Multiarch folders
// ("/lib/x86_64-linux-gnu") are found by listing /lib and /usr/lib.
constexpr const char* kLibcFolders[] = {"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
constexpr std::size_t kMaxLibcBytes = 64 << 20;

template <typename T>
Probed<T> FromStatus(const Status& status) {
  return Probed<T>::Unknown(status.message());
}

Probed<std::string> LineOrUnknown(const RootFs& root, const std::string& path) {
  Result<std::string> line = root.ReadLine(path);
  if (!line.ok()) return FromStatus<std::string>(line.status());
  if (line->empty()) return Probed<std::string>::Unknown(path + ": empty");
  return Probed<std::string>::Known(*line);
}

bool IsNumaNodeName(const std::string& name) {
  return name.size() > 4 && name.starts_with("node") &&
         std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Candidate libc.so.6 paths: the fixed folders, then multiarch ones ("*-linux-gnu*").
std::vector<std::string> LibcCandidates(const RootFs& root) {
  std::vector<std::string> candidates;
  for (const char* folder : kLibcFolders) {
    candidates.push_back(std::string(folder) + "/libc.so.6");
    Result<std::vector<std::string>> entries = root.ListDirectory(folder);
    if (!entries.ok()) continue;
    for (const std::string& entry : *entries) {
      if (entry.find("-linux-gnu") != std::string::npos) {
        candidates.push_back(std::string(folder) + "/" + entry + "/libc.so.6");
      }
    }
  }
  return candidates;
}

}  // namespace

HostFacts HostProbe::Probe() const {
  HostFacts host;
  host.cpu = ProbeCpu();
  host.memory_bytes = ProbeMemory();
  host.numa_nodes = ProbeNumaNodes();
  host.os = ProbeOs();
  host.virtualization = ProbeVirtualization(host.cpu);
  return host;
}

CpuFacts HostProbe::ProbeCpu() const {
  Result<std::string> text = root_.ReadFile("/proc/cpuinfo", 16 << 20);
  if (text.ok()) return ParseCpuInfo(*text);
  CpuFacts cpu;
  const std::string& reason = text.status().message();
  cpu.vendor = cpu.model_name = cpu.microcode = cpu.isa_level =
      Probed<std::string>::Unknown(reason);
  cpu.family = cpu.model = cpu.stepping = cpu.sockets = cpu.cores = cpu.threads =
      Probed<std::int64_t>::Unknown(reason);
  cpu.flags = cpu.avx512 = cpu.amx = Probed<std::vector<std::string>>::Unknown(reason);
  return cpu;
}

Probed<std::int64_t> HostProbe::ProbeMemory() const {
  Result<std::string> text = root_.ReadFile("/proc/meminfo");
  if (!text.ok()) return FromStatus<std::int64_t>(text.status());
  Result<std::int64_t> bytes = ParseMemTotalBytes(*text);
  if (!bytes.ok()) {
    return FromStatus<std::int64_t>(bytes.status().WithContext("/proc/meminfo"));
  }
  return Probed<std::int64_t>::Known(*bytes);
}

Probed<std::int64_t> HostProbe::ProbeNumaNodes() const {
  Result<std::vector<std::string>> entries = root_.ListDirectory("/sys/devices/system/node");
  if (!entries.ok()) return FromStatus<std::int64_t>(entries.status());
  auto count = std::count_if(entries->begin(), entries->end(), IsNumaNodeName);
  if (count == 0) {
    return Probed<std::int64_t>::Unknown("/sys/devices/system/node lists no node");
  }
  return Probed<std::int64_t>::Known(count);
}

OsFacts HostProbe::ProbeOs() const {
  OsFacts os;
  Result<std::string> text = root_.ReadFile("/etc/os-release");
  if (!text.ok()) text = root_.ReadFile("/usr/lib/os-release");
  if (text.ok()) {
    auto fields = ParseOsRelease(*text);
    auto pick = [&fields](const std::string& key) {
      auto it = fields.find(key);
      return it == fields.end() ? Probed<std::string>::Unknown("os-release has no " + key)
                                : Probed<std::string>::Known(it->second);
    };
    os.name = pick("PRETTY_NAME");
    os.id = pick("ID");
    if (os.id.known() && fields.count("VERSION_ID")) {
      os.id = Probed<std::string>::Known(os.id.value() + " " + fields["VERSION_ID"]);
    }
  } else {
    os.name = os.id = FromStatus<std::string>(text.status());
  }
  os.kernel_release = LineOrUnknown(root_, "/proc/sys/kernel/osrelease");
  os.kernel_version = LineOrUnknown(root_, "/proc/sys/kernel/version");
  os.glibc = ProbeGlibc();
  return os;
}

Probed<std::string> HostProbe::ProbeGlibc() const {
  for (const std::string& path : LibcCandidates(root_)) {
    Result<std::string> bytes = root_.ReadFile(path, kMaxLibcBytes);
    if (!bytes.ok()) continue;
    Result<std::string> version = ParseGlibcBanner(*bytes);
    if (version.ok()) return Probed<std::string>::Known(*version);
  }
  return Probed<std::string>::Unknown("no glibc found (musl, or an unusual library layout)");
}

VirtualizationFacts HostProbe::ProbeVirtualization(const CpuFacts& cpu) const {
  VirtualizationFacts facts;
  Result<std::string> cgroup = root_.ReadFile("/proc/1/cgroup");
  bool dockerenv = root_.Exists("/.dockerenv");
  bool containerenv = root_.Exists("/run/.containerenv");
  if (cgroup.ok() || dockerenv || containerenv) {
    std::string text = cgroup.ok() ? *cgroup : std::string();
    facts.container = Probed<std::string>::Known(DetectContainer(dockerenv, containerenv, text));
  } else {
    facts.container = FromStatus<std::string>(cgroup.status());
  }
  if (cpu.flags.known()) {
    const auto& flags = cpu.flags.value();
    bool hypervisor = std::find(flags.begin(), flags.end(), "hypervisor") != flags.end();
    facts.hypervisor = Probed<bool>::Known(hypervisor);
  } else {
    facts.hypervisor = Probed<bool>::Unknown(cpu.flags.reason());
  }
  facts.sys_vendor = LineOrUnknown(root_, "/sys/class/dmi/id/sys_vendor");
  facts.product_name = LineOrUnknown(root_, "/sys/class/dmi/id/product_name");
  return facts;
}

}  // namespace orch::fingerprint
