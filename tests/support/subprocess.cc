#include "tests/support/subprocess.h"

#include <signal.h>

#include "base/check.h"
#include "base/spawn.h"

namespace orch::testing {

ProcessResult RunProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         const std::string& working_dir, const std::string& stdin_path) {
  SpawnOptions options;
  options.argv = argv;
  options.search_path = true;
  options.working_directory = working_dir;
  if (!stdin_path.empty()) options.stdin_stream = Stdio::File(stdin_path);
  options.stdout_stream = Stdio::Pipe();
  options.stderr_stream = Stdio::Pipe();
  options.die_with_parent = true;  // an aborted test leaves no child behind
  Result<SpawnedChild> child = SpawnChild(options);
  ORCH_CHECK(child.ok()) << "spawn: " << child.status().ToString();

  ProcessResult result;
  int fds[] = {child->stdout_pipe.get(), child->stderr_pipe.get()};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!ReadToEnd(fds, deadline, [&result](std::size_t index, std::string_view bytes) {
        (index == 0 ? result.out : result.err).append(bytes);
      })) {
    result.timed_out = true;
    ::kill(child->pid, SIGKILL);
  }
  Result<ChildExit> exit = WaitForExit(child->pid);
  ORCH_CHECK(exit.ok()) << exit.status().ToString();
  result.exit_code = exit->ShellCode();
  return result;
}

std::string OrchBinary() { return std::string(ORCH_BINARY_DIR) + "/cli/orch"; }

std::string TestDriverBinary() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-test-driver";
}

std::string SimAgentsBinary() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-sim-agents";
}

}  // namespace orch::testing
