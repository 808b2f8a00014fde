// ScriptedCommandRunner: the in-memory twin of CommandRunner. Returns scripted output for
// exact argument lists and records every call; an unscripted program is NotFound, as an
// absent tool would be.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fingerprint/command_runner.h"

namespace orch::fingerprint {

class ScriptedCommandRunner final : public CommandRunner {
 public:
  // Later scripts for the same argv replace earlier ones.
  void Script(std::vector<std::string> argv, Result<CommandOutput> result);
  // Convenience: exit 0 with `stdout_text`.
  void ScriptOutput(std::vector<std::string> argv, std::string stdout_text);

  Result<CommandOutput> Run(const std::vector<std::string>& argv) override;

  // Every argv passed to Run, in order.
  const std::vector<std::vector<std::string>>& calls() const { return calls_; }

 private:
  std::map<std::vector<std::string>, Result<CommandOutput>> scripts_;
  std::vector<std::vector<std::string>> calls_;
};

}  // namespace orch::fingerprint
