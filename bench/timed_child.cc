#include "bench/timed_child.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "driver_protocol/frames.h"

extern char** environ;

namespace orch::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Splits frames (u32 little-endian length, u8 type, payload) as bytes arrive
// and notes when the first hello, the first record and done completed.
class FrameClock final {
 public:
  explicit FrameClock(ChildRun* run) : run_(run) {}

  void Scan() {
    const std::string& out = run_->out;
    while (out.size() - offset_ >= 5) {
      std::uint32_t length = 0;
      for (int i = 3; i >= 0; --i)
        length = (length << 8) | static_cast<unsigned char>(out[offset_ + i]);
      if (out.size() - offset_ - 5 < length) return;
      Note(static_cast<driver_protocol::DriverFrameType>(out[offset_ + 4]));
      offset_ += 5 + static_cast<std::size_t>(length);
    }
  }

 private:
  void Note(driver_protocol::DriverFrameType type) {
    double now = Milliseconds(run_->start, Clock::now());
    ++run_->frames;
    if (type == driver_protocol::DriverFrameType::kHello && run_->hello_ms < 0)
      run_->hello_ms = now;
    if (type == driver_protocol::DriverFrameType::kRecord && run_->records++ == 0)
      run_->first_record_ms = now;
    if (type == driver_protocol::DriverFrameType::kDone) run_->done_ms = now;
  }

  ChildRun* run_;  // not owned
  std::size_t offset_ = 0;
};

// Owns posix_spawn's file actions.
class SpawnActions final {
 public:
  SpawnActions(const std::string& stdin_path, int stdout_fd) {
    posix_spawn_file_actions_init(&actions_);
    posix_spawn_file_actions_addopen(&actions_, 0, stdin_path.c_str(), O_RDONLY,
                                     0);
    posix_spawn_file_actions_adddup2(&actions_, stdout_fd, 1);
    posix_spawn_file_actions_addopen(&actions_, 2, "/dev/null", O_WRONLY, 0);
  }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

void DrainAndWait(int fd, pid_t pid, bool framed, ChildRun* run) {
  FrameClock clock(run);
  char buffer[1 << 16];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    run->out.append(buffer, static_cast<std::size_t>(n));
    if (framed) clock.Scan();
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run->total_ms = Milliseconds(run->start, Clock::now());
  run->exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

double Milliseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

Result<ChildRun> RunTimedChild(const std::vector<std::string>& argv,
                               const std::string& stdin_path, bool framed) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return IoError("pipe: " + std::string(std::strerror(errno)));
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  ChildRun run;
  pid_t pid = 0;
  int rc = 0;
  {
    SpawnActions actions(stdin_path, pipe_fds[1]);
    run.start = Clock::now();
    rc = posix_spawn(&pid, args[0], actions.get(), nullptr, args.data(),
                     environ);
  }
  close(pipe_fds[1]);
  if (rc == 0) DrainAndWait(pipe_fds[0], pid, framed, &run);
  close(pipe_fds[0]);
  if (rc != 0)
    return IoError("cannot start " + argv[0] + ": " + std::strerror(rc));
  return run;
}

}  // namespace orch::bench
