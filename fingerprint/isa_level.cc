#include "fingerprint/isa_level.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace orch::fingerprint {
namespace {

// Flag names as Linux prints them. "pni" is SSE3, "abm" carries LZCNT, "lahf_lm" is
// LAHF/SAHF in 64-bit mode. OSXSAVE is not printed; "xsave" stands in for it.
constexpr std::array<std::string_view, 8> kV1 = {"cmov", "cx8",     "fpu", "fxsr",
                                                 "mmx",  "syscall", "sse", "sse2"};
constexpr std::array<std::string_view, 7> kV2 = {"cx16",   "lahf_lm", "popcnt", "pni",
                                                 "sse4_1", "sse4_2",  "ssse3"};
constexpr std::array<std::string_view, 9> kV3 = {"avx", "avx2", "bmi1",  "bmi2", "f16c",
                                                 "fma", "abm",  "movbe", "xsave"};
constexpr std::array<std::string_view, 5> kV4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                                                 "avx512vl"};

template <std::size_t N>
bool HasAll(const std::vector<std::string>& flags, const std::array<std::string_view, N>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&flags](std::string_view flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  });
}

std::vector<std::string> WithPrefix(const std::vector<std::string>& flags,
                                    std::string_view prefix) {
  std::vector<std::string> found;
  for (const std::string& flag : flags) {
    if (flag.starts_with(prefix)) found.push_back(flag);
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

Probed<std::string> X86IsaLevel(const std::vector<std::string>& flags) {
  if (!HasAll(flags, kV1)) {
    return Probed<std::string>::Unknown("flags do not meet the x86-64 baseline");
  }
  int level = 1;
  if (HasAll(flags, kV2)) level = 2;
  if (level == 2 && HasAll(flags, kV3)) level = 3;
  if (level == 3 && HasAll(flags, kV4)) level = 4;
  return Probed<std::string>::Known("x86-64-v" + std::to_string(level));
}

std::vector<std::string> Avx512Subsets(const std::vector<std::string>& flags) {
  return WithPrefix(flags, "avx512");
}

std::vector<std::string> AmxFeatures(const std::vector<std::string>& flags) {
  return WithPrefix(flags, "amx");
}

}  // namespace orch::fingerprint
