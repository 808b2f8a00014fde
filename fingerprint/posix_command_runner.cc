#include "fingerprint/posix_command_runner.h"

#include <signal.h>

#include <algorithm>

#include "base/spawn.h"

namespace orch::fingerprint {
namespace {

using Clock = std::chrono::steady_clock;

void AppendCapped(std::string& to, std::string_view bytes, std::size_t cap) {
  if (to.size() < cap) to.append(bytes.substr(0, cap - to.size()));
}

class PosixCommandRunner final : public CommandRunner {
 public:
  explicit PosixCommandRunner(PosixCommandRunnerOptions options) : options_(std::move(options)) {}

  Result<CommandOutput> Run(const std::vector<std::string>& argv) override;

 private:
  Result<std::string> FindProgram(const std::string& name) const;

  PosixCommandRunnerOptions options_;
};

Result<std::string> PosixCommandRunner::FindProgram(const std::string& name) const {
  Result<std::string> found = orch::FindProgram(name, options_.search_path);
  if (found.ok()) return found;
  if (name.find('/') != std::string::npos) return NotFound("no executable file " + name);
  return NotFound("command not found on the search path: " + name);
}

Result<CommandOutput> PosixCommandRunner::Run(const std::vector<std::string>& argv) {
  ORCH_CHECK(!argv.empty()) << "Run with an empty argv";
  SpawnOptions spawn;
  ORCH_ASSIGN_OR_RETURN(spawn.program, FindProgram(argv[0]));
  spawn.argv = argv;
  spawn.inherit_environment = false;
  spawn.environment = options_.environment;
  spawn.stdin_stream = Stdio::Null();
  spawn.stdout_stream = Stdio::Pipe();
  spawn.stderr_stream = Stdio::Pipe();
  Result<SpawnedChild> child = SpawnChild(spawn);
  if (!child.ok()) return IoError("start " + child.status().message());

  Clock::time_point deadline = Clock::now() + options_.timeout;
  CommandOutput output;
  int fds[] = {child->stdout_pipe.get(), child->stderr_pipe.get()};
  bool drained = ReadToEnd(fds, deadline, [&](std::size_t index, std::string_view bytes) {
    AppendCapped(index == 0 ? output.stdout_text : output.stderr_text, bytes,
                 options_.max_output_bytes);
  });
  // The child closed its pipes: it is exiting; it gets what is left of the timeout.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  Result<std::optional<ChildExit>> exit =
      WaitForExit(child->pid, drained ? std::max(left, std::chrono::milliseconds(0))
                                      : std::chrono::milliseconds(0));
  if (!exit.ok() || !exit->has_value()) {
    ::kill(child->pid, SIGKILL);
    (void)WaitForExit(child->pid);
    return Status(StatusCode::kUnavailable, argv[0] + ": timed out after " +
                                                std::to_string(options_.timeout.count()) +
                                                " ms and was killed");
  }
  output.exit_code = (*exit)->ShellCode();
  return output;
}

}  // namespace

std::unique_ptr<CommandRunner> MakePosixCommandRunner(PosixCommandRunnerOptions options) {
  return std::make_unique<PosixCommandRunner>(std::move(options));
}

}  // namespace orch::fingerprint
