// The real CommandRunner: base/spawn.h with stdout/stderr pipes, a timeout, and its own
// PATH lookup (so callers choose the search path instead of the process environment).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fingerprint/command_runner.h"

namespace orch::fingerprint {

struct PosixCommandRunnerOptions {
  std::string search_path{};                  // like $PATH: directories separated by ':'
  std::vector<std::string> environment{};     // the child's whole environment, "NAME=value"
  std::chrono::milliseconds timeout{10'000};  // per command; the child is killed after
  std::size_t max_output_bytes = 16 << 20;    // per stream; more is read and dropped
};

// Not thread-safe; one runner per thread. Children never outlive Run().
std::unique_ptr<CommandRunner> MakePosixCommandRunner(PosixCommandRunnerOptions options);

}  // namespace orch::fingerprint
