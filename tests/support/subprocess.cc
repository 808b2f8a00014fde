#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/check.h"

extern char** environ;

namespace orch::testing {
namespace {

bool Drain(int fd, std::string& sink) {
  char buffer[4096];
  ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n > 0) sink.append(buffer, static_cast<std::size_t>(n));
  return n > 0 || (n < 0 && errno == EINTR);
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout, const std::string& working_dir,
                         const std::string& stdin_path) {
  int out_pipe[2], err_pipe[2];
  ORCH_CHECK(::pipe2(out_pipe, O_CLOEXEC) == 0 && ::pipe2(err_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  if (!stdin_path.empty())
    posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ORCH_CHECK(rc == 0) << "spawn " << argv[0] << ": " << rc;

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (pollfd& p : fds) {
      if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP)) == 0) continue;
      if (!Drain(p.fd, p.fd == out_pipe[0] ? result.out : result.err)) {
        p.fd = -1;
        --open_fds;
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
