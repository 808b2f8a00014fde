// CommandRunner: runs a short-lived tool (nvidia-smi, rocm-smi, git) and returns what it
// printed. The role behind which probes spawn processes, so tests can script the output.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace orch::fingerprint {

struct CommandOutput {
  int exit_code = 0;  // the tool's exit status; 128 + signal number if a signal ended it
  std::string stdout_text;
  std::string stderr_text;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs argv[0] (looked up on the runner's search path unless it contains '/') with
  // the remaining arguments and stdin empty, and waits for it to finish.
  // Errors: NotFound when the program does not exist (the usual "no GPU tool" case),
  // Unavailable when it ran past the runner's timeout (it is killed), IoError when it
  // could not be started. A non-zero exit is not an error: it is in exit_code.
  // Precondition: argv is non-empty.
  virtual Result<CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

}  // namespace orch::fingerprint
