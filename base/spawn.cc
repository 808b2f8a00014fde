#include "base/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace orch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kResetSignals[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP};
constexpr mode_t kFileMode = 0644;

Status SpawnError(const std::string& program, int error) {
  return Status(error == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                program + ": " + std::strerror(error));
}

// Moves `fd` above the standard streams, so that no redirect of the child's 0..2 can
// overwrite it before it is used. -1 when that fails (`fd` is closed either way).
int AboveStdio(int fd) {
  if (fd > STDERR_FILENO) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

struct PipeEnds {
  UniqueFd read;
  UniqueFd write;
};

Result<PipeEnds> MakePipe(const std::string& program) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return SpawnError(program, errno);
  PipeEnds ends{UniqueFd(AboveStdio(fds[0])), UniqueFd(AboveStdio(fds[1]))};
  if (!ends.read.valid() || !ends.write.valid()) return SpawnError(program, errno);
  return ends;
}

// One redirect of a child's standard stream: dup2(source, target), or, with source -1,
// open(path, flags) onto target.
struct FdAction {
  int target = -1;
  int source = -1;
  const char* path = nullptr;
  int flags = 0;
};

// Everything the child needs, prepared before it starts: the forked child may not
// allocate. Pointers point into the SpawnOptions and into `environment`.
struct Plan {
  std::string program;
  std::vector<std::string> environment;
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* working_directory = nullptr;
  std::vector<FdAction> actions;
  UniqueFd child_ends[3];  // this process's copies of the child's pipe ends
};

bool IsExecutableFile(const std::string& path, bool* exists) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
  *exists = true;
  return ::access(path.c_str(), X_OK) == 0;
}

Result<std::string> ResolveProgram(const SpawnOptions& options) {
  const std::string& name = options.program.empty() ? options.argv[0] : options.program;
  if (!options.search_path || name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  return FindProgram(name, path != nullptr ? path : "/bin:/usr/bin");
}

std::vector<std::string> BuildEnvironment(const SpawnOptions& options) {
  if (!options.inherit_environment) return options.environment;
  auto replaced = [&options](std::string_view variable) {
    std::string_view name = variable.substr(0, variable.find('=') + 1);  // "NAME="
    return std::any_of(options.environment.begin(), options.environment.end(),
                       [name](const std::string& added) { return added.starts_with(name); });
  };
  std::vector<std::string> environment;
  for (char** variable = environ; variable != nullptr && *variable != nullptr; ++variable) {
    if (!replaced(*variable)) environment.emplace_back(*variable);
  }
  environment.insert(environment.end(), options.environment.begin(), options.environment.end());
  return environment;
}

UniqueFd* ParentEnd(SpawnedChild& child, int target) {
  UniqueFd* ends[3] = {&child.stdin_pipe, &child.stdout_pipe, &child.stderr_pipe};
  return ends[target];
}

Status AddStream(int target, const Stdio& stdio, Plan& plan, SpawnedChild& child) {
  int output_flags = O_WRONLY | O_CREAT | O_APPEND;
  switch (stdio.kind) {
    case Stdio::Kind::kInherit:
      return Status::Ok();
    case Stdio::Kind::kNull:
      plan.actions.push_back({target, -1, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY});
      return Status::Ok();
    case Stdio::Kind::kFile:
      plan.actions.push_back(
          {target, -1, stdio.path.c_str(), target == 0 ? O_RDONLY : output_flags});
      return Status::Ok();
    case Stdio::Kind::kPipe: {
      ORCH_ASSIGN_OR_RETURN(PipeEnds pipe, MakePipe(plan.program));
      bool input = target == 0;
      plan.child_ends[target] = std::move(input ? pipe.read : pipe.write);
      *ParentEnd(child, target) = std::move(input ? pipe.write : pipe.read);
      plan.actions.push_back({target, plan.child_ends[target].get()});
      return Status::Ok();
    }
    case Stdio::Kind::kParentFd:
      plan.actions.push_back({target, stdio.fd});
      return Status::Ok();
    case Stdio::Kind::kStdout:
      if (target != STDERR_FILENO) {
        return InvalidArgument(plan.program + ": only stderr can go to the child's stdout");
      }
      plan.actions.push_back({target, STDOUT_FILENO});
      return Status::Ok();
  }
  return Internal(plan.program + ": unknown stream kind");
}

Result<pid_t> StartWithPosixSpawn(const SpawnOptions& options, Plan& plan) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (plan.working_directory != nullptr) {
    posix_spawn_file_actions_addchdir_np(&actions, plan.working_directory);
  }
  for (const FdAction& action : plan.actions) {
    if (action.source < 0) {
      posix_spawn_file_actions_addopen(&actions, action.target, action.path, action.flags,
                                       kFileMode);
    } else {
      posix_spawn_file_actions_adddup2(&actions, action.source, action.target);
    }
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  short flags = 0;
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  if (options.reset_signals) {
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : kResetSignals) sigaddset(&defaults, signal);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
  }
  posix_spawnattr_setflags(&attributes, flags);
  pid_t pid = -1;
  int error = ::posix_spawn(&pid, plan.program.c_str(), &actions, &attributes, plan.argv.data(),
                            plan.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) return SpawnError(plan.program, error);
  return pid;
}

// In the forked child: reports errno to the parent and ends.
[[noreturn]] void FailInChild(int error_fd) {
  int error = errno;
  ssize_t ignored = ::write(error_fd, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

// In the forked child: the parent's handlers must not run here (they may touch state
// shared with the parent, a self-pipe say), and reset_signals undoes ignored signals.
void ResetSignalActions(bool reset_ignored) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal = 1; signal < NSIG; ++signal) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0) continue;
    bool caught = (current.sa_flags & SA_SIGINFO) != 0 ||
                  (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    bool reset_ignore = reset_ignored && current.sa_handler == SIG_IGN &&
                        std::find(std::begin(kResetSignals), std::end(kResetSignals), signal) !=
                            std::end(kResetSignals);
    if (caught || reset_ignore) ::sigaction(signal, &default_action, nullptr);
  }
}

// In the forked child: async-signal-safe calls only, then exec.
[[noreturn]] void ExecInChild(const SpawnOptions& options, const Plan& plan, pid_t parent,
                              const sigset_t& parent_mask, int error_fd) {
  ResetSignalActions(options.reset_signals);
  if (options.new_process_group && ::setpgid(0, 0) != 0) FailInChild(error_fd);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) FailInChild(error_fd);
  if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl
  if (plan.working_directory != nullptr && ::chdir(plan.working_directory) != 0) {
    FailInChild(error_fd);
  }
  for (const FdAction& action : plan.actions) {
    int source = action.source;
    if (source < 0 && (source = ::open(action.path, action.flags, kFileMode)) < 0) {
      FailInChild(error_fd);
    }
    if (source == action.target) {
      if (::fcntl(source, F_SETFD, 0) != 0) FailInChild(error_fd);  // keep it across exec
      continue;
    }
    if (::dup2(source, action.target) < 0) FailInChild(error_fd);
    if (action.source < 0) ::close(source);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, options.reset_signals ? &none : &parent_mask, nullptr);
  ::execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
  FailInChild(error_fd);
}

Result<pid_t> StartWithFork(const SpawnOptions& options, Plan& plan) {
  ORCH_ASSIGN_OR_RETURN(PipeEnds errors, MakePipe(plan.program));
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);  // no handler runs in the child
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) ExecInChild(options, plan, parent, previous, errors.write.get());
  int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return SpawnError(plan.program, fork_error);
  errors.write.Reset();
  int child_error = 0;
  ssize_t n = 0;
  do {
    n = ::read(errors.read.get(), &child_error, sizeof child_error);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof child_error) return pid;  // end of file: the exec closed the pipe
  (void)WaitForExit(pid);
  return SpawnError(plan.program, child_error);
}

ChildExit FromWaitStatus(int status) {
  if (WIFSIGNALED(status)) return ChildExit{-1, WTERMSIG(status)};
  return ChildExit{WEXITSTATUS(status), 0};
}

Status WaitError(pid_t pid) {
  return IoError("wait for pid " + std::to_string(pid) + ": " + std::strerror(errno));
}

}  // namespace

Result<SpawnedChild> SpawnChild(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgument("spawn: no program given (empty argv)");
  Plan plan;
  ORCH_ASSIGN_OR_RETURN(plan.program, ResolveProgram(options));
  for (const std::string& arg : options.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  plan.environment = BuildEnvironment(options);
  for (std::string& variable : plan.environment) plan.envp.push_back(variable.data());
  plan.envp.push_back(nullptr);
  if (!options.working_directory.empty()) {
    plan.working_directory = options.working_directory.c_str();
  }
  SpawnedChild child;
  const Stdio* streams[3] = {&options.stdin_stream, &options.stdout_stream, &options.stderr_stream};
  for (int target = 0; target < 3; ++target) {
    ORCH_RETURN_IF_ERROR(AddStream(target, *streams[target], plan, child));
  }
  Result<pid_t> pid =
      options.die_with_parent ? StartWithFork(options, plan) : StartWithPosixSpawn(options, plan);
  if (!pid.ok()) return pid.status();
  child.pid = *pid;
  return child;  // the child's pipe ends in `plan` close here
}

Result<std::string> FindProgram(const std::string& name, std::string_view directories) {
  bool exists = false;
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name, &exists)) return name;
    return SpawnError(name, exists ? EACCES : ENOENT);
  }
  while (!directories.empty()) {
    std::size_t colon = std::min(directories.find(':'), directories.size());
    std::string_view dir = directories.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    if (IsExecutableFile(candidate, &exists)) return candidate;
    directories.remove_prefix(std::min(colon + 1, directories.size()));
  }
  return SpawnError(name, exists ? EACCES : ENOENT);
}

Result<ChildExit> WaitForExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return WaitError(pid);
  }
  return FromWaitStatus(status);
}

Result<std::optional<ChildExit>> WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds pause(1);
  while (true) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return std::optional<ChildExit>(FromWaitStatus(status));
    if (done < 0 && errno != EINTR) return WaitError(pid);
    Clock::time_point now = Clock::now();
    if (now >= deadline) return std::optional<ChildExit>();
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(10));
  }
}

bool ReadToEnd(std::span<const int> fds, Clock::time_point deadline,
               const std::function<void(std::size_t, std::string_view)>& on_data) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  std::size_t open = polled.size();
  char buffer[65536];
  while (open > 0) {
    int wait_ms = -1;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX));
    }
    int ready = ::poll(polled.data(), polled.size(), wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return true;
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].fd < 0 || polled[i].revents == 0) continue;
      ssize_t n = ::read(polled[i].fd, buffer, sizeof buffer);
      if (n > 0) on_data(i, std::string_view(buffer, static_cast<std::size_t>(n)));
      if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) continue;
      polled[i].fd = -1;  // poll skips negative descriptors
      --open;
    }
  }
  return true;
}

}  // namespace orch
