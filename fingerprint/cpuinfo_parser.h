// Pure parsing of /proc/cpuinfo text into CpuFacts. No I/O: the caller reads the file.
//
// The first processor block gives vendor, model and flags; all blocks together give the
// socket, core and thread counts. Keys missing from the text (ARM cpuinfo has no
// "model name", containers may hide "microcode") come back unknown with a reason. The ISA
// level, AVX-512 and AMX fields are derived from the flags (isa_level.h).
#pragma once

#include <string_view>

#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

CpuFacts ParseCpuInfo(std::string_view cpuinfo_text);

}  // namespace orch::fingerprint
