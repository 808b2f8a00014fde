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

struct LoadedBackend {
  std::string variant;               // "haswell"; empty for a build with a built-in CPU backend
  std::string path;                  // the library file loaded; empty likewise
  int score = 0;                     // the variant's own score on this CPU (0 = cannot run)
  std::vector<std::string> devices;  // "CPU: Intel(R) Xeon(R) ...", GPUs, ...
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

// Loads `name` ("best" or a variant name) and then every non-CPU backend of the
// build (GPU builds). kFailedPrecondition (the coordinate cannot run here)
// when the build has no such variant, or when it cannot run on this CPU; the
// message lists the variants that can.
Result<LoadedBackend> LoadCpuBackend(const std::string& name);

}  // namespace orch::drivers::llamacpp
