// What a CPU flag set implies for x86 code paths that engines pick at run time.
//
// The x86-64 micro-architecture levels follow the psABI definitions
// (x86-64-v2: SSE4.2, POPCNT...; v3: AVX2, FMA, BMI2...; v4: AVX-512 F/BW/CD/DQ/VL), using
// the flag names Linux prints in /proc/cpuinfo. Pure functions of the flag list.
#pragma once

#include <string>
#include <vector>

#include "fingerprint/probed.h"

namespace orch::fingerprint {

// "x86-64-v1".."x86-64-v4"; unknown when the flags do not even meet the x86-64 baseline
// (another architecture).
Probed<std::string> X86IsaLevel(const std::vector<std::string>& flags);

// The AVX-512 subsets present ("avx512f", "avx512_bf16", ...), sorted.
std::vector<std::string> Avx512Subsets(const std::vector<std::string>& flags);

// The AMX features present ("amx_bf16", "amx_int8", "amx_tile", ...), sorted.
std::vector<std::string> AmxFeatures(const std::vector<std::string>& flags);

}  // namespace orch::fingerprint
