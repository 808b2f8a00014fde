#include "fingerprint/host_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::CopyFixture;
using testing::TempDir;
using testing::TestData;

HostFacts ProbeFixture(const std::string& fixture) {
  RootFs root(TestData(fixture));
  return HostProbe(root).Probe();
}

TEST(HostProbeTest, SapphireRapidsCpuNode) {
  HostFacts host = ProbeFixture("sapphire_rapids");
  EXPECT_EQ(host.cpu.model_name.value(), "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(host.cpu.isa_level.value(), "x86-64-v4");
  EXPECT_EQ(host.cpu.amx.value().size(), 3u);
  EXPECT_EQ(host.memory_bytes.value(), 527988716LL * 1024);
  EXPECT_EQ(host.numa_nodes.value(), 2);
  EXPECT_EQ(host.os.name.value(), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(host.os.id.value(), "debian 12");
  EXPECT_EQ(host.os.kernel_release.value(), "6.1.0-18-amd64");
  EXPECT_EQ(host.os.kernel_version.value(), "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)");
  EXPECT_EQ(host.os.glibc.value(), "2.36 (Debian GLIBC 2.36-9+deb12u4)");
  EXPECT_EQ(host.virtualization.container.value(), "none");
  EXPECT_FALSE(host.virtualization.hypervisor.value());
  EXPECT_EQ(host.virtualization.sys_vendor.value(), "Dell Inc.");
}

TEST(HostProbeTest, EpycVmInAContainerWithoutNumaFolder) {
  HostFacts host = ProbeFixture("epyc");
  EXPECT_EQ(host.cpu.vendor.value(), "AuthenticAMD");
  EXPECT_EQ(host.os.id.value(), "rocky 9.3");
  EXPECT_EQ(host.os.glibc.value(), "2.34 (GNU libc)");  // from /lib64/libc.so.6
  EXPECT_EQ(host.virtualization.container.value(), "docker");
  EXPECT_TRUE(host.virtualization.hypervisor.value());
  EXPECT_EQ(host.virtualization.product_name.value(), "Standard PC (Q35 + ICH9, 2009)");
  EXPECT_FALSE(host.numa_nodes.known());
  EXPECT_EQ(host.numa_nodes.reason(), "/sys/devices/system/node: No such file or directory");
}

TEST(HostProbeTest, EmptyRootLeavesEveryFieldUnknownWithAReason) {
  TempDir dir;
  HostFacts host = HostProbe(RootFs(dir.path())).Probe();
  EXPECT_EQ(host.cpu.vendor.reason(), "/proc/cpuinfo: No such file or directory");
  EXPECT_FALSE(host.cpu.isa_level.known());
  EXPECT_FALSE(host.memory_bytes.known());
  EXPECT_FALSE(host.os.name.known());
  EXPECT_FALSE(host.os.kernel_release.known());
  EXPECT_NE(host.os.glibc.reason().find("no glibc"), std::string::npos);
  EXPECT_FALSE(host.virtualization.container.known());
  EXPECT_FALSE(host.virtualization.hypervisor.known());
}

// Makes `path` unreadable. Root reads any file whatever its mode, so for root the file is
// replaced by a directory, which no one can read() as a file.
void MakeUnreadable(const std::string& path) {
  if (::geteuid() == 0) {
    std::filesystem::remove(path);
    std::filesystem::create_directory(path);
  } else {
    ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  }
}

TEST(HostProbeTest, UnreadableProcFilesLeaveFieldsUnknownWithTheReason) {
  TempDir dir;
  CopyFixture("sapphire_rapids", dir.path());
  MakeUnreadable(dir / "proc/cpuinfo");
  MakeUnreadable(dir / "proc/meminfo");
  MakeUnreadable(dir / "proc/sys/kernel/osrelease");
  HostFacts host = HostProbe(RootFs(dir.path())).Probe();
  std::string expected = ::geteuid() == 0 ? "Is a directory" : "Permission denied";
  EXPECT_EQ(host.cpu.model_name.reason(), "/proc/cpuinfo: " + expected);
  EXPECT_EQ(host.cpu.flags.reason(), "/proc/cpuinfo: " + expected);
  EXPECT_EQ(host.memory_bytes.reason(), "/proc/meminfo: " + expected);
  EXPECT_EQ(host.os.kernel_release.reason(), "/proc/sys/kernel/osrelease: " + expected);
  EXPECT_EQ(host.os.name.value(), "Debian GNU/Linux 12 (bookworm)");  // the rest still works
}

TEST(HostProbeTest, ReasonsDoNotMentionTheRootDirectory) {
  TempDir dir;
  HostFacts host = HostProbe(RootFs(dir.path())).Probe();
  EXPECT_EQ(host.memory_bytes.reason().find(dir.path()), std::string::npos);
}

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

TEST(HostProbeTest, RealMachineHasAvx2MemoryAndAKernel) {
  HostFacts host = HostProbe(RootFs("/")).Probe();
  ASSERT_TRUE(host.cpu.flags.known()) << host.cpu.flags.reason();
#if defined(__x86_64__)
  EXPECT_TRUE(Contains(host.cpu.flags.value(), "avx2"));
#endif
  ASSERT_TRUE(host.memory_bytes.known()) << host.memory_bytes.reason();
  EXPECT_GT(host.memory_bytes.value(), 0);
  ASSERT_TRUE(host.os.kernel_release.known()) << host.os.kernel_release.reason();
  EXPECT_FALSE(host.os.kernel_release.value().empty());
}

}  // namespace
}  // namespace orch::fingerprint
