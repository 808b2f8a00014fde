#include "fingerprint/system_file_parsers.h"

#include <gtest/gtest.h>

namespace orch::fingerprint {
namespace {

TEST(SystemFileParsersTest, MemTotalIsConvertedFromKibibytesToBytes) {
  Result<std::int64_t> bytes = ParseMemTotalBytes("MemTotal:       24731708 kB\nMemFree: 1 kB\n");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 24731708LL * 1024);
  EXPECT_FALSE(ParseMemTotalBytes("MemFree: 1 kB\n").ok());
  EXPECT_FALSE(ParseMemTotalBytes("MemTotal: lots\n").ok());
}

TEST(SystemFileParsersTest, OsReleaseValuesAreUnquoted) {
  auto fields = ParseOsRelease(
      "# comment\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"
      "VERSION_ID='12'\nBROKEN LINE\n");
  EXPECT_EQ(fields["PRETTY_NAME"], "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(fields["ID"], "debian");
  EXPECT_EQ(fields["VERSION_ID"], "12");
  EXPECT_EQ(fields.count("BROKEN LINE"), 0u);
}

TEST(SystemFileParsersTest, GlibcBannerGivesVersionAndBuild) {
  std::string bytes(
      "\x7f"
      "ELF\0\0junk",
      9);
  bytes += "GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36.";
  bytes += std::string("\0more", 5);
  Result<std::string> glibc = ParseGlibcBanner(bytes);
  ASSERT_TRUE(glibc.ok()) << glibc.status().ToString();
  EXPECT_EQ(*glibc, "2.36 (Debian GLIBC 2.36-9+deb12u4)");
  EXPECT_EQ(ParseGlibcBanner("musl libc").status().code(), StatusCode::kNotFound);
}

TEST(SystemFileParsersTest, NvidiaKernelModuleLineIsTrimmedAndCollapsed) {
  Result<std::string> module = ParseNvidiaKernelModule(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
      "2024\nGCC version:  gcc version 12.3.0\n");
  ASSERT_TRUE(module.ok());
  EXPECT_EQ(*module, "NVIDIA UNIX x86_64 Kernel Module 550.54.15 Tue Mar 5 22:23:56 UTC 2024");
  EXPECT_FALSE(ParseNvidiaKernelModule("garbage").ok());
}

TEST(SystemFileParsersTest, ContainerIsDetectedFromMarkersAndCgroups) {
  EXPECT_EQ(DetectContainer(true, false, "0::/"), "docker");
  EXPECT_EQ(DetectContainer(false, true, "0::/"), "podman");
  EXPECT_EQ(DetectContainer(false, false, "12:cpu:/kubepods/besteffort/pod1/abc"), "kubernetes");
  EXPECT_EQ(DetectContainer(false, false, "11:memory:/docker/0123abcd"), "docker");
  EXPECT_EQ(DetectContainer(false, false, "0::/init.scope"), "none");
}

}  // namespace
}  // namespace orch::fingerprint
