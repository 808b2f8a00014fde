#include "cli/child_process.h"

#include <signal.h>
#include <unistd.h>

#include "base/spawn.h"

namespace orch::cli {

Result<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                         const std::string& log_file) {
  if (argv.empty()) return InvalidArgument("no program to start");
  SpawnOptions options;
  options.argv = argv;
  options.search_path = true;
  options.stdin_stream = Stdio::Null();
  options.stdout_stream = Stdio::File(log_file);
  options.stderr_stream = Stdio::Stdout();
  options.new_process_group = true;
  options.die_with_parent = true;
  Result<SpawnedChild> child = SpawnChild(options);
  if (!child.ok()) return IoError("cannot start " + child.status().message());
  return ChildProcess(child->pid);
}

Result<int> RunToExit(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("no program to start");
  SpawnOptions options;
  options.argv = argv;
  options.search_path = true;
  options.stdin_stream = Stdio::Null();
  options.stdout_stream = Stdio::ParentFd(STDERR_FILENO);
  Result<SpawnedChild> child = SpawnChild(options);
  if (!child.ok()) return IoError("cannot start " + child.status().message());
  Result<ChildExit> exit = WaitForExit(child->pid);
  if (!exit.ok()) return exit.status().WithContext(argv[0]);
  return exit->ShellCode();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (running()) Stop(std::chrono::milliseconds(0));
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (running()) Stop(std::chrono::milliseconds(0));
}

void ChildProcess::Signal(int signal) {
  if (running()) ::kill(-pid_, signal);
}

std::optional<int> ChildProcess::WaitFor(std::chrono::milliseconds timeout) {
  if (pid_ <= 0 || exit_code_) return exit_code_;
  Result<std::optional<ChildExit>> exit = WaitForExit(pid_, timeout);
  if (exit.ok() && exit->has_value()) exit_code_ = (*exit)->ShellCode();
  return exit_code_;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (!running()) return exit_code_.value_or(-1);
  Signal(SIGTERM);
  return AwaitStop(grace);
}

int ChildProcess::AwaitStop(std::chrono::milliseconds grace) {
  if (!running()) return exit_code_.value_or(-1);
  if (std::optional<int> code = WaitFor(grace)) return *code;
  Signal(SIGKILL);
  return WaitFor(std::chrono::seconds(10)).value_or(-1);
}

}  // namespace orch::cli
