// ProcessLauncher: starts one driver process per run and reports its output and
// exit.
//
// The contract (tests/agent/process_launcher_contract_test.cc runs it against the
// real launcher and the scripted twin) for every implementation:
// - Launch writes `stdin_bytes` to the child's stdin and closes it; each piece of
//   the child's stdout is handed to `on_stdout` in order; every piece of stderr to
//   `on_stderr` (when set), and its last kStderrTailBytes are kept in the exit.
// - `on_exit` runs exactly once, after the last `on_stdout` and `on_stderr`, unless
//   the Process is destroyed first. Callbacks run on the launcher's event loop,
//   never inside Launch or Cancel.
// - Cancel() and the timeout kill the child's whole process group; when either
//   comes before the launcher has seen the child end, the exit says kCancelled or
//   kTimedOut (exit_code -1, signal 0). Cancel() is idempotent, and changes nothing
//   once the exit was reported.
// - Destroying a Process kills and reaps a child that is still running; no
//   callback runs afterwards.
// - With `keep_stdin_open` (a session driver, docs/driver-protocol.md) stdin
//   stays open after `stdin_bytes`: Write appends more in order, CloseStdin ends
//   it (end of file for the child) once what was written is written. A child
//   that closed its stdin loses what is written after. SetTimeout restarts the
//   timeout from now.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::agent {

// Bytes of stderr kept for error reports.
inline constexpr std::size_t kStderrTailBytes = 8192;

struct LaunchRequest {
  std::string executable;
  std::vector<std::string> args;  // argv[1..]
  std::string stdin_bytes;
  std::chrono::milliseconds timeout{600000};
  bool keep_stdin_open = false;
};

struct ProcessExit {
  enum class Reason { kExited, kSignaled, kTimedOut, kCancelled };
  Reason reason = Reason::kExited;
  int exit_code = -1;  // for kExited
  int signal = 0;      // for kSignaled
  std::string stderr_tail;

  // "exit status 3", "killed by signal 6 (Aborted)", "timed out", "cancelled".
  std::string Describe() const;
};

struct ProcessHandlers {
  std::function<void(std::string_view)> on_stdout;
  std::function<void(ProcessExit)> on_exit;
  // Optional: every piece of stderr, in order, before on_exit (the full log;
  // ProcessExit keeps only the tail).
  std::function<void(std::string_view)> on_stderr;
};

class Process {
 public:
  virtual ~Process() = default;
  // Kills the process group; on_exit follows with kCancelled. Idempotent.
  virtual void Cancel() = 0;
  // Appends `bytes` to the child's stdin (keep_stdin_open); dropped once it is
  // closed.
  virtual void Write(std::string bytes) = 0;
  // End of file on the child's stdin, after what was written. Idempotent.
  virtual void CloseStdin() = 0;
  // The child's group is killed (kTimedOut) `timeout` from now, unless it ends
  // first; replaces the timeout armed before.
  virtual void SetTimeout(std::chrono::milliseconds timeout) = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // kIoError / kNotFound when the child cannot be started (no callback runs
  // then).
  virtual Result<std::unique_ptr<Process>> Launch(const LaunchRequest& request,
                                                  ProcessHandlers handlers) = 0;
};

}  // namespace orch::agent
