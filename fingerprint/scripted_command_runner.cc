#include "fingerprint/scripted_command_runner.h"

#include <utility>

namespace orch::fingerprint {

void ScriptedCommandRunner::Script(std::vector<std::string> argv, Result<CommandOutput> result) {
  scripts_.insert_or_assign(std::move(argv), std::move(result));
}

void ScriptedCommandRunner::ScriptOutput(std::vector<std::string> argv, std::string stdout_text) {
  CommandOutput output;
  output.stdout_text = std::move(stdout_text);
  Script(std::move(argv), std::move(output));
}

Result<CommandOutput> ScriptedCommandRunner::Run(const std::vector<std::string>& argv) {
  ORCH_CHECK(!argv.empty()) << "Run with an empty argv";
  calls_.push_back(argv);
  auto it = scripts_.find(argv);
  if (it != scripts_.end()) return it->second;
  return NotFound("command not found on the search path: " + argv[0]);
}

}  // namespace orch::fingerprint
