// A child process started by the CLI (daemons under `orch run`, or e2e tests): spawned
// with SpawnChild (base/spawn.h), output appended to a log file, stopped by pid. The
// destructor kills a child that is still running (SIGKILL) and reaps it, and the child
// gets SIGKILL when the thread that started it ends (a crashed or killed `orch run`), so
// no process outlives its owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::cli {

class ChildProcess final {
 public:
  // Starts argv[0] (looked up on PATH when it has no '/') with stdout and stderr
  // appended to `log_file`, stdin from /dev/null, in its own process group.
  static Result<ChildProcess> Start(const std::vector<std::string>& argv,
                                    const std::string& log_file);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exit_code_; }

  // Sends `signal` to the child's process group (the child and what it started).
  void Signal(int signal);
  // Waits up to `timeout` for the child to exit; its exit code (128 + signal when killed)
  // or nullopt when it is still running.
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  // SIGTERM, then AwaitStop(grace).
  int Stop(std::chrono::milliseconds grace);
  // For a child already sent SIGTERM: wait up to `grace`, then SIGKILL and reap.
  // Returns the exit code. (A second SIGTERM could reach it while it ends, after it
  // stopped handling signals, and cut its clean-up short.)
  int AwaitStop(std::chrono::milliseconds grace);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Runs argv[0] (looked up on PATH when it has no '/') to completion in the foreground:
// stdin from /dev/null, its stdout onto this process's stderr (so a command's own stdout
// stays clean for --json), its stderr inherited. Returns its exit code, 128 + signal when
// a signal killed it. Errors: IoError when it cannot be started.
Result<int> RunToExit(const std::vector<std::string>& argv);

}  // namespace orch::cli
