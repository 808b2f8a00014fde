// Pure parsers for GPU vendor tool output. No I/O: gpu_probe.h runs the tools.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

// The --query-gpu field list, in the column order ParseNvidiaSmiCsv expects.
std::string NvidiaSmiQueryFields();

// Output of `nvidia-smi --query-gpu=<NvidiaSmiQueryFields()> --format=csv,noheader`:
// one line per GPU, values separated by ", ", units kept. "[N/A]" and "[Not Supported]"
// become unknown with that text as the reason. A line with the wrong column count is an
// InvalidArgument naming the line.
Result<std::vector<GpuFacts>> ParseNvidiaSmiCsv(std::string_view csv);

// The driver's CUDA version from `nvidia-smi -q` (or the plain `nvidia-smi` banner):
// accepts "CUDA Version : 12.4", "CUDA Version: 12.4" and "CUDA Driver Version : 13.0".
Result<std::string> ParseNvidiaCudaVersion(std::string_view text);

// Output of `rocm-smi --showproductname --showdriverversion --showuniqueid --showvbios
// --showbus --showmeminfo vram --json`: one GPU per "cardN" object, sorted by card
// number; the "system" object's "Driver version" fills `driver_version` (also returned
// through `rocm_driver_version` when non-null).
Result<std::vector<GpuFacts>> ParseRocmSmiJson(std::string_view json,
                                               std::string* rocm_driver_version);

}  // namespace orch::fingerprint
