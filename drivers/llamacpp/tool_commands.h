// The driver's commands besides running jobs (driver_main.cc): quantize, variants and
// accelerators, and the accelerator list the hello shares with the last.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "drivers/llamacpp/cpu_backend.h"

namespace orch::drivers::llamacpp {

// The driver's exit codes besides 0 (docs/driver-protocol.md).
inline constexpr int kExitInvalid = 2;  // invalid job or coordinate
inline constexpr int kExitEngine = 3;   // the engine failed

// [{"file", "loaded", "why" (when not loaded)}]
nlohmann::json AcceleratorsJson(const std::vector<AcceleratorBackend>& accelerators);

// DRIVER quantize IN OUT TYPE [THREADS]: `orch model quantize`'s engine step.
int QuantizeCommand(int argc, char** argv);

// DRIVER variants: the CPU kernel variants and their scores here (JSON).
int VariantsCommand();

// DRIVER accelerators [DIR]: the accelerator backend files of the build, or of DIR,
// loaded here: whether each loads, why not, and the devices then registered (JSON).
int AcceleratorsCommand(int argc, char** argv);

}  // namespace orch::drivers::llamacpp
