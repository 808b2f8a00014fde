// SpawnChild: the one way orch starts a child process, and the waits that go with it.
//
// SpawnChild() starts a program with the argv, environment, working directory and
// standard streams that SpawnOptions names, optionally in its own process group and
// bound to die with its parent, and returns its pid with this side of every pipe asked
// for. The caller owns the child from then on: nothing here kills it, and it must be
// reaped (WaitForExit) or it stays a zombie. Every descriptor this file creates is
// close-on-exec in this process, so one child's pipes never leak into another child.
//
// How the child is started (posix_spawn, or fork + exec for `die_with_parent`):
// - By default through posix_spawn: glibc starts the child with clone(CLONE_VM |
//   CLONE_VFORK), so the cost does not grow with this process's memory, it is safe in a
//   threaded process, and an exec failure comes back as the call's error.
// - With `die_with_parent` (Linux) through fork + exec, because PR_SET_PDEATHSIG can only
//   be set by the child itself between fork and exec, and posix_spawn has no hook there.
//   The other way, a trampoline program that sets it and then execs the real one, would
//   make every caller ship and locate a second binary for one prctl call. The forked
//   child makes async-signal-safe calls only (everything is prepared before the fork),
//   signals stay blocked across the fork and the parent's handlers are reset before they
//   could run in the child, and an exec failure travels back through a close-on-exec pipe,
//   so both ways fail alike. The child gets SIGKILL when the *thread* that spawned it
//   ends (that is what the kernel tracks): spawn from a thread that outlives the child,
//   such as the main thread or the event loop's.
//
// Errors: a Status whose message is "<program>: <errno text>", kNotFound when the program
// (or its interpreter) does not exist, kIoError for anything else the system refused,
// kInvalidArgument for an empty argv. On error no child is left and no descriptor leaks.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace orch {

// Where one of the child's standard streams (stdin, stdout, stderr) comes from or goes.
struct Stdio {
  enum class Kind {
    kInherit,   // this process's own stream
    kNull,      // /dev/null
    kFile,      // `path`: read for stdin; created (0644) and appended to for stdout/stderr
    kPipe,      // a new pipe; this side is returned in SpawnedChild
    kParentFd,  // a duplicate of this process's descriptor `fd`
    kStdout,    // stderr only: wherever the child's stdout goes (2>&1)
  };
  Kind kind = Kind::kInherit;
  std::string path;  // kFile; relative paths start from the child's working directory
  int fd = -1;       // kParentFd

  static Stdio Inherit() { return {}; }
  static Stdio Null() { return {Kind::kNull, "", -1}; }
  static Stdio File(std::string path) { return {Kind::kFile, std::move(path), -1}; }
  static Stdio Pipe() { return {Kind::kPipe, "", -1}; }
  static Stdio ParentFd(int fd) { return {Kind::kParentFd, "", fd}; }
  static Stdio Stdout() { return {Kind::kStdout, "", -1}; }
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] names the program; must not be empty
  // The file to execute when it is not argv[0] (a path the caller resolved itself while
  // argv[0] keeps the short name). Empty: argv[0].
  std::string program{};
  // Look a program without '/' up on this process's $PATH (FindProgram below; the first
  // executable regular file wins). Off: the program is a path, relative to this
  // process's working directory.
  bool search_path = false;
  // On: the child gets this process's environment plus `environment` ("NAME=value"),
  // which replaces inherited variables of the same name. Off: exactly `environment`.
  bool inherit_environment = true;
  std::vector<std::string> environment{};
  std::string working_directory{};  // empty: this process's; entered before the streams
  // Set up in this order, so a kParentFd of 0..2 means this process's stream only for
  // streams not redirected before it.
  Stdio stdin_stream{};
  Stdio stdout_stream{};
  Stdio stderr_stream{};
  bool new_process_group = false;  // the child leads a new group (pgid = its pid)
  bool die_with_parent = false;    // Linux: SIGKILL when the spawning thread ends
  // The child starts with no signal blocked and SIGPIPE, SIGTERM, SIGINT and SIGHUP at
  // their default action, whatever this process ignores. Off: it inherits the spawning
  // thread's signal mask and ignored signals.
  bool reset_signals = false;
};

struct SpawnedChild {
  pid_t pid = -1;
  UniqueFd stdin_pipe;   // write end, when stdin_stream was kPipe
  UniqueFd stdout_pipe;  // read end, when stdout_stream was kPipe
  UniqueFd stderr_pipe;  // read end, when stderr_stream was kPipe
};

[[nodiscard]] Result<SpawnedChild> SpawnChild(const SpawnOptions& options);

// The file to execute for `name`: `name` itself when it contains '/', else the first
// `dir/name` over `directories` (':'-separated like $PATH; an empty entry before the
// last is the current directory; "" has none); either way an executable regular file. kNotFound naming `name` when there
// is none, kIoError ("Permission denied") when the only candidates cannot be executed.
// SpawnOptions::search_path uses it with this process's $PATH.
[[nodiscard]] Result<std::string> FindProgram(const std::string& name,
                                              std::string_view directories);

// How a reaped child ended.
struct ChildExit {
  int exit_code = -1;  // its exit status, when it exited
  int signal = 0;      // the signal that killed it; 0 when it exited
  bool signaled() const { return signal != 0; }
  // The shell's convention: the exit status, or 128 + the signal.
  int ShellCode() const { return signal != 0 ? 128 + signal : exit_code; }
};

// Blocks until `pid`, a child of this process, ends and reaps it. kIoError naming the pid
// when it cannot be waited for (not a child, or already reaped).
[[nodiscard]] Result<ChildExit> WaitForExit(pid_t pid);
// The same, giving up after `timeout` (zero: only looks): nullopt while it still runs.
// Polls waitpid (every 1 ms, slowing to 10 ms) instead of handling SIGCHLD, so it
// coexists with any other child handling in the process.
[[nodiscard]] Result<std::optional<ChildExit>> WaitForExit(pid_t pid,
                                                           std::chrono::milliseconds timeout);

// Reads every descriptor in `fds` until each reaches end of file, handing each chunk to
// `on_data(index in fds, bytes)` as it arrives, or until `deadline` passes (time_point::
// max(): no deadline). True when all reached end of file, false when the deadline came
// first. A descriptor that cannot be read (or the set that cannot be polled) counts as
// finished. Does not close the descriptors.
bool ReadToEnd(std::span<const int> fds, std::chrono::steady_clock::time_point deadline,
               const std::function<void(std::size_t, std::string_view)>& on_data);

}  // namespace orch
