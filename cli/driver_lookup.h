// Where orch finds an engine's driver executable when the user names none: the
// llama.cpp driver of release REL is `orch-driver-llamacpp-REL`, next to the orch
// executable, installed in ../lib/orch/drivers/ from it (the Debian packages: /usr/bin/orch,
// /usr/lib/orch/drivers/), or built in the build tree's drivers/llamacpp/ folder
// (docs/drivers.md).
// Used by `orch run` (engines `llama.cpp@REL`) and `orch model quantize --engine REL`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::cli {

// Where to look for the driver of llama.cpp `release`, in order: next to the orch
// executable, then ../lib/orch/drivers/ (an FHS install), then the build tree's
// drivers/llamacpp/ folder. `exe_dir` is the folder holding the orch executable.
std::vector<std::string> DefaultDriverCandidates(const std::string& exe_dir,
                                                 const std::string& release);

// Where to look for the driver of server family `family` (orch-driver-FAMILY, e.g.
// orch-driver-llama-server): next to orch, ../lib/orch/drivers/, then the build tree's
// drivers/server/ (links to the checkout's drivers/server/ programs).
std::vector<std::string> ServerDriverCandidates(const std::string& exe_dir,
                                                const std::string& family);

// Where to look for the llama-server of llama.cpp `release` (llama-server-REL):
// ../lib/orch/servers/, then the build tree's drivers/server/ (a link to what
// scripts/setup-engines built under third_party/engines/llama.cpp-REL/server/).
std::vector<std::string> LlamaServerCandidates(const std::string& exe_dir,
                                               const std::string& release);

// "b8390" for "llama-server@b8390"; nullopt for another engine or a release that is not a
// plain name.
std::optional<std::string> LlamaServerRelease(std::string_view engine);

// "A, B and C": the candidates for an error that says where orch looked.
std::string JoinPlaces(const std::vector<std::string>& places);

// "b8390" for the engine "llama.cpp@b8390"; nullopt for another engine or a release that
// is not a plain name (letters, digits, '.', '-', '_'; it becomes part of a file name).
std::optional<std::string> LlamaCppRelease(std::string_view engine);

// The folder of the running executable (/proc/self/exe), "." when it cannot be read.
std::string ExecutableDir();

}  // namespace orch::cli
