#include "fingerprint/isa_level.h"

#include <gtest/gtest.h>

#include <sstream>

namespace orch::fingerprint {
namespace {

std::vector<std::string> Flags(const std::string& text) {
  std::istringstream words(text);
  std::vector<std::string> flags;
  for (std::string word; words >> word;) flags.push_back(word);
  return flags;
}

const std::string kV1 = "fpu cx8 cmov mmx fxsr sse sse2 syscall lm ";
const std::string kV2 = kV1 + "pni ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm ";
const std::string kV3 = kV2 + "avx avx2 bmi1 bmi2 f16c fma abm movbe xsave ";
const std::string kV4 = kV3 + "avx512f avx512bw avx512cd avx512dq avx512vl ";

TEST(IsaLevelTest, ReportsEachX8664Level) {
  EXPECT_EQ(X86IsaLevel(Flags(kV1)).value(), "x86-64-v1");
  EXPECT_EQ(X86IsaLevel(Flags(kV2)).value(), "x86-64-v2");
  EXPECT_EQ(X86IsaLevel(Flags(kV3)).value(), "x86-64-v3");
  EXPECT_EQ(X86IsaLevel(Flags(kV4)).value(), "x86-64-v4");
}

TEST(IsaLevelTest, OneMissingFlagDropsTheLevel) {
  std::string without_fma = kV4;
  without_fma.replace(without_fma.find("fma "), 4, "");
  EXPECT_EQ(X86IsaLevel(Flags(without_fma)).value(), "x86-64-v2");
}

TEST(IsaLevelTest, NonX86FlagsLeaveTheLevelUnknown) {
  Probed<std::string> level = X86IsaLevel(Flags("fp asimd evtstrm aes pmull sha1 crc32"));
  EXPECT_FALSE(level.known());
  EXPECT_NE(level.reason().find("baseline"), std::string::npos);
}

TEST(IsaLevelTest, ListsAvx512SubsetsAndAmxFeaturesSorted) {
  auto flags = Flags("amx_tile avx512_bf16 sse avx512f amx_int8 avx2 avx512vl amx_bf16");
  EXPECT_EQ(Avx512Subsets(flags), (std::vector<std::string>{"avx512_bf16", "avx512f", "avx512vl"}));
  EXPECT_EQ(AmxFeatures(flags), (std::vector<std::string>{"amx_bf16", "amx_int8", "amx_tile"}));
  EXPECT_TRUE(AmxFeatures(Flags(kV4)).empty());
}

}  // namespace
}  // namespace orch::fingerprint
