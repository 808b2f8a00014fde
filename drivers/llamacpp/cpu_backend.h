// Loading exactly one CPU kernel variant of a llama.cpp build.
//
// A llama.cpp release ships its CPU backend as one shared library per ISA level
// (libggml-cpu-haswell.so, ...-sapphirerapids.so, ...). Which one runs changes
// the logits' bits, so the driver loads one named variant, or the best-scoring
// one for "best", and reports the file it loaded. Variants are taken only from
// the folder of the linked libllama (mixing engine builds is refused or crashes).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace orch::drivers::llamacpp {

// An accelerator backend file of the build (libggml-cuda.so, ...): whether it
// loaded here, and why not. A CUDA build (scripts/setup-engines --cuda) on a host
// without the NVIDIA driver or the CUDA runtime has the file and cannot load it.
struct AcceleratorBackend {
  std::string file;  // "libggml-cuda.so"
  bool loaded = false;
  std::string why;  // when not loaded: the loader's error
};

struct LoadedBackend {
  std::string variant;  // "haswell"; empty for a build with a built-in CPU backend
  std::string path;     // the library file loaded; empty likewise
  int score = 0;        // the variant's own score on this CPU (0 = cannot run)
  std::vector<std::string> devices = {};  // "CPU: Intel(R) Xeon(R) ...", GPUs, ...
  std::vector<AcceleratorBackend> accelerators = {};
};

// The folder holding the linked libllama.
std::string EngineLibraryDir();

// Every variant file in `dir` with its score on this CPU, by name.
struct VariantScore {
  std::string variant;
  std::string path;
  int score = 0;
};
std::vector<VariantScore> ScoreCpuVariants(const std::string& dir);

// Loads every accelerator backend file in `dir` (libggml-*.so that is neither a
// CPU variant nor libggml-base.so), by name; a file that cannot load (a missing
// libcuda.so.1, libcudart, ...) is skipped and reported, never fatal.
std::vector<AcceleratorBackend> LoadAcceleratorBackends(const std::string& dir);

// "NAME: description" of every device registered so far.
std::vector<std::string> DeviceNames();

// The GPUs (discrete or integrated) among the devices registered so far.
int GpuDeviceCount();

// "libggml-cuda.so: not loaded (libcuda.so.1: cannot open shared object file ...)",
// joined by "; ", or "none" when the build has no accelerator backend file.
std::string DescribeAccelerators(const std::vector<AcceleratorBackend>& accelerators);

// kFailedPrecondition for a `hardware = "gpu..."` job on a process whose
// backends found no GPU: names the library folder and each accelerator file
// with why it did not load, or says the build has none.
Status NoGpuDevice(const std::string& hardware, const LoadedBackend& backend,
                   const std::string& dir);

// Loads `name` ("best" or a variant name) and then every non-CPU backend of the
// build (GPU builds). kFailedPrecondition (the coordinate cannot run here)
// when the build has no such variant, or when it cannot run on this CPU; the
// message lists the variants that can.
Result<LoadedBackend> LoadCpuBackend(const std::string& name);

}  // namespace orch::drivers::llamacpp
