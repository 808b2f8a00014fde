#include "fingerprint/cpuinfo_parser.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::ReadText;
using testing::TestData;

bool HasFlag(const CpuFacts& cpu, const std::string& flag) {
  const auto& flags = cpu.flags.value();
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

TEST(CpuInfoParserTest, ReadsIdentityOfASapphireRapidsXeon) {
  CpuFacts cpu = ParseCpuInfo(ReadText(TestData("sapphire_rapids/proc/cpuinfo")));
  EXPECT_EQ(cpu.vendor.value(), "GenuineIntel");
  EXPECT_EQ(cpu.model_name.value(), "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(cpu.family.value(), 6);
  EXPECT_EQ(cpu.model.value(), 143);
  EXPECT_EQ(cpu.stepping.value(), 8);
  EXPECT_EQ(cpu.microcode.value(), "0x2b000590");
}

TEST(CpuInfoParserTest, DerivesIsaLevelAvx512AndAmxFromFlags) {
  CpuFacts cpu = ParseCpuInfo(ReadText(TestData("sapphire_rapids/proc/cpuinfo")));
  EXPECT_TRUE(HasFlag(cpu, "avx2"));
  EXPECT_TRUE(std::is_sorted(cpu.flags.value().begin(), cpu.flags.value().end()));
  EXPECT_EQ(cpu.isa_level.value(), "x86-64-v4");
  EXPECT_EQ(cpu.amx.value(), (std::vector<std::string>{"amx_bf16", "amx_int8", "amx_tile"}));
  const auto& avx512 = cpu.avx512.value();
  EXPECT_NE(std::find(avx512.begin(), avx512.end(), "avx512_fp16"), avx512.end());
}

TEST(CpuInfoParserTest, CountsSocketsCoresAndThreads) {
  CpuFacts cpu = ParseCpuInfo(ReadText(TestData("sapphire_rapids/proc/cpuinfo")));
  EXPECT_EQ(cpu.sockets.value(), 2);
  EXPECT_EQ(cpu.cores.value(), 4);
  EXPECT_EQ(cpu.threads.value(), 4);
}

TEST(CpuInfoParserTest, EpycHasAvx512ButNoAmx) {
  CpuFacts cpu = ParseCpuInfo(ReadText(TestData("epyc/proc/cpuinfo")));
  EXPECT_EQ(cpu.vendor.value(), "AuthenticAMD");
  EXPECT_EQ(cpu.family.value(), 25);
  EXPECT_EQ(cpu.isa_level.value(), "x86-64-v4");
  EXPECT_TRUE(cpu.amx.value().empty());
  EXPECT_EQ(cpu.sockets.value(), 1);
  EXPECT_EQ(cpu.cores.value(), 2);
}

TEST(CpuInfoParserTest, MissingKeysAreUnknownWithTheKeyInTheReason) {
  CpuFacts cpu = ParseCpuInfo(
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm\n"
      "CPU implementer\t: 0x41\n\nprocessor\t: 1\nFeatures\t: fp asimd evtstrm\n");
  EXPECT_FALSE(cpu.model_name.known());
  EXPECT_NE(cpu.model_name.reason().find("model name"), std::string::npos);
  EXPECT_FALSE(cpu.microcode.known());
  EXPECT_EQ(cpu.flags.value(), (std::vector<std::string>{"asimd", "evtstrm", "fp"}));
  EXPECT_FALSE(cpu.isa_level.known());
  EXPECT_EQ(cpu.threads.value(), 2);
  EXPECT_FALSE(cpu.cores.known());
}

TEST(CpuInfoParserTest, EmptyTextGivesUnknownsNotACrash) {
  CpuFacts cpu = ParseCpuInfo("");
  EXPECT_FALSE(cpu.vendor.known());
  EXPECT_FALSE(cpu.flags.known());
  EXPECT_FALSE(cpu.isa_level.known());
  EXPECT_FALSE(cpu.threads.known());
}

TEST(CpuInfoParserTest, NonNumericFamilyIsUnknown) {
  CpuFacts cpu = ParseCpuInfo("processor : 0\ncpu family : six\n");
  EXPECT_FALSE(cpu.family.known());
  EXPECT_NE(cpu.family.reason().find("six"), std::string::npos);
}

}  // namespace
}  // namespace orch::fingerprint
