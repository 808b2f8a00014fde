#include "fingerprint/posix_command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace orch::fingerprint {
namespace {

using Clock = std::chrono::steady_clock;

bool IsExecutableFile(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Owns one end of a pipe; -1 when closed.
class Fd final {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read_end;
  Fd write_end;
};

Status MakePipe(Pipe& pipe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return IoError(std::string("pipe: ") + std::strerror(errno));
  }
  pipe.read_end.Reset(fds[0]);
  pipe.write_end.Reset(fds[1]);
  return Status::Ok();
}

// Owns the file actions and argv/envp arrays handed to posix_spawn.
class SpawnRequest final {
 public:
  SpawnRequest(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    posix_spawn_file_actions_init(&actions_);
    for (const std::string& arg : argv) argv_.push_back(const_cast<char*>(arg.c_str()));
    for (const std::string& var : env) envp_.push_back(const_cast<char*>(var.c_str()));
    argv_.push_back(nullptr);
    envp_.push_back(nullptr);
  }
  ~SpawnRequest() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnRequest(const SpawnRequest&) = delete;
  SpawnRequest& operator=(const SpawnRequest&) = delete;

  posix_spawn_file_actions_t* actions() { return &actions_; }
  char* const* argv() { return argv_.data(); }
  char* const* envp() { return envp_.data(); }

 private:
  posix_spawn_file_actions_t actions_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

class PosixCommandRunner final : public CommandRunner {
 public:
  explicit PosixCommandRunner(PosixCommandRunnerOptions options)
      : options_(std::move(options)) {}

  Result<CommandOutput> Run(const std::vector<std::string>& argv) override;

 private:
  Result<std::string> FindProgram(const std::string& name) const;
  // Reads both pipes until EOF or the deadline. False when the deadline passed first.
  bool Drain(Fd& out, Fd& err, Clock::time_point deadline, CommandOutput& output) const;
  // Waits for `pid` until the deadline, then kills it. Returns the wait status or -1.
  int Reap(pid_t pid, Clock::time_point deadline) const;

  PosixCommandRunnerOptions options_;
};

Result<std::string> PosixCommandRunner::FindProgram(const std::string& name) const {
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return name;
    return NotFound("no executable file " + name);
  }
  std::istringstream dirs(options_.search_path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return NotFound("command not found on the search path: " + name);
}

void AppendCapped(std::string& to, const char* data, std::size_t size, std::size_t cap) {
  if (to.size() < cap) to.append(data, std::min(size, cap - to.size()));
}

bool PosixCommandRunner::Drain(Fd& out, Fd& err, Clock::time_point deadline,
                               CommandOutput& output) const {
  char buffer[65536];
  while (out.get() >= 0 || err.get() >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}};
    int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;  // cannot poll: stop reading, still reap the child
    if (ready == 0) return false;
    Fd* ends[2] = {&out, &err};
    std::string* texts[2] = {&output.stdout_text, &output.stderr_text};
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = ::read(ends[i]->get(), buffer, sizeof buffer);
      if (n > 0) AppendCapped(*texts[i], buffer, n, options_.max_output_bytes);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) ends[i]->Close();
    }
  }
  return true;
}

int PosixCommandRunner::Reap(pid_t pid, Clock::time_point deadline) const {
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) break;
    ::usleep(1000);  // the child closed its pipes; it is exiting
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return -1;
}

Result<CommandOutput> PosixCommandRunner::Run(const std::vector<std::string>& argv) {
  ORCH_CHECK(!argv.empty()) << "Run with an empty argv";
  ORCH_ASSIGN_OR_RETURN(std::string program, FindProgram(argv[0]));
  Pipe out, err;
  ORCH_RETURN_IF_ERROR(MakePipe(out));
  ORCH_RETURN_IF_ERROR(MakePipe(err));
  SpawnRequest request(argv, options_.environment);
  posix_spawn_file_actions_addopen(request.actions(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(request.actions(), out.write_end.get(), 1);
  posix_spawn_file_actions_adddup2(request.actions(), err.write_end.get(), 2);
  pid_t pid = 0;
  int spawn_error = ::posix_spawn(&pid, program.c_str(), request.actions(), nullptr,
                                  request.argv(), request.envp());
  if (spawn_error != 0) {
    return IoError("start " + program + ": " + std::strerror(spawn_error));
  }
  out.write_end.Close();
  err.write_end.Close();
  Clock::time_point deadline = Clock::now() + options_.timeout;
  CommandOutput output;
  bool drained = Drain(out.read_end, err.read_end, deadline, output);
  int status = Reap(pid, drained ? deadline : Clock::now());
  if (!drained || status < 0) {
    return Status(StatusCode::kUnavailable,
                  argv[0] + ": timed out after " + std::to_string(options_.timeout.count()) +
                      " ms and was killed");
  }
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

}  // namespace

std::unique_ptr<CommandRunner> MakePosixCommandRunner(PosixCommandRunnerOptions options) {
  return std::make_unique<PosixCommandRunner>(std::move(options));
}

}  // namespace orch::fingerprint
