#include "agent/posix_process_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

extern char** environ;

namespace orch::agent {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::milliseconds kReapPoll{10};

// One running child. Shared with the pending asio handlers, which hold it
// weakly.
struct Child : std::enable_shared_from_this<Child> {
  Child(asio::io_context& io, pid_t pid, int in, int out, int err,
        ProcessHandlers h)
      : pid(pid),
        stdin_pipe(io, in),
        stdout_pipe(io, out),
        stderr_pipe(io, err),
        reap_timer(io),
        deadline(io),
        handlers(std::move(h)) {}

  pid_t pid;
  asio::posix::stream_descriptor stdin_pipe;
  asio::posix::stream_descriptor stdout_pipe;
  asio::posix::stream_descriptor stderr_pipe;
  asio::steady_timer reap_timer;
  asio::steady_timer deadline;
  ProcessHandlers handlers;
  std::string stdin_bytes;
  char out_buffer[65536];
  char err_buffer[8192];
  ProcessExit exit;
  bool killed = false;  // cancel or timeout decided the reason
  bool reaped = false;
  bool stdout_done = false;
  bool stderr_done = false;
  bool reported = false;
  bool detached = false;  // the Process was destroyed: no more callbacks

  void Kill(ProcessExit::Reason reason) {
    if (reaped) return;
    if (!killed) exit.reason = reason;
    killed = true;
    ::kill(-pid, SIGKILL);
  }

  void Start(std::string bytes, std::chrono::milliseconds timeout) {
    stdin_bytes = std::move(bytes);
    auto self = shared_from_this();
    asio::async_write(stdin_pipe, asio::buffer(stdin_bytes),
                      [self](const boost::system::error_code&, std::size_t) {
                        boost::system::error_code ignored;
                        self->stdin_pipe.close(ignored);
                      });
    ReadStdout();
    ReadStderr();
    deadline.expires_after(timeout);
    deadline.async_wait(
        [weak = weak_from_this()](const boost::system::error_code& error) {
          auto child = weak.lock();
          if (!error && child) child->Kill(ProcessExit::Reason::kTimedOut);
        });
    PollReap();
  }

  void ReadStdout() {
    stdout_pipe.async_read_some(
        asio::buffer(out_buffer),
        [self = shared_from_this()](const boost::system::error_code& error,
                                    std::size_t n) {
          if (n > 0 && !self->detached) {
            self->handlers.on_stdout(std::string_view(self->out_buffer, n));
          }
          if (error || self->detached) {
            self->stdout_done = true;
            self->MaybeReport();
            return;
          }
          self->ReadStdout();
        });
  }

  void ReadStderr() {
    stderr_pipe.async_read_some(
        asio::buffer(err_buffer),
        [self = shared_from_this()](const boost::system::error_code& error,
                                    std::size_t n) {
          std::string& tail = self->exit.stderr_tail;
          tail.append(self->err_buffer, n);
          if (n > 0 && !self->detached && self->handlers.on_stderr) {
            self->handlers.on_stderr(std::string_view(self->err_buffer, n));
          }
          if (tail.size() > kStderrTailBytes)
            tail.erase(0, tail.size() - kStderrTailBytes);
          if (error || self->detached) {
            self->stderr_done = true;
            self->MaybeReport();
            return;
          }
          self->ReadStderr();
        });
  }

  void PollReap() {
    int status = 0;
    pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc == pid || (rc < 0 && errno == ECHILD)) {
      reaped = true;
      if (!killed && rc == pid && WIFEXITED(status)) {
        exit.reason = ProcessExit::Reason::kExited;
        exit.exit_code = WEXITSTATUS(status);
      } else if (!killed && rc == pid && WIFSIGNALED(status)) {
        exit.reason = ProcessExit::Reason::kSignaled;
        exit.signal = WTERMSIG(status);
      }
      ::kill(-pid,
             SIGKILL);  // leftovers of the group would hold the pipes open
      deadline.cancel();
      MaybeReport();
      return;
    }
    reap_timer.expires_after(kReapPoll);
    reap_timer.async_wait(
        [weak = weak_from_this()](const boost::system::error_code& error) {
          auto child = weak.lock();
          if (!error && child) child->PollReap();
        });
  }

  void MaybeReport() {
    if (reported || detached || !reaped || !stdout_done || !stderr_done) return;
    reported = true;
    handlers.on_exit(exit);
  }

  // Called when the Process is destroyed: no callbacks from now on.
  void Detach() {
    detached = true;
    if (!reaped) {
      ::kill(-pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      reaped = true;
    }
    boost::system::error_code ignored;
    reap_timer.cancel();
    deadline.cancel();
    stdin_pipe.close(ignored);
    stdout_pipe.close(ignored);
    stderr_pipe.close(ignored);
  }
};

class PosixProcess final : public Process {
 public:
  explicit PosixProcess(std::shared_ptr<Child> child)
      : child_(std::move(child)) {}
  ~PosixProcess() override { child_->Detach(); }
  void Cancel() override { child_->Kill(ProcessExit::Reason::kCancelled); }

 private:
  std::shared_ptr<Child> child_;  // shared with in-flight asio handlers
};

struct Pipe {
  int read = -1;
  int write = -1;
};

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return IoError(std::string("pipe: ") + std::strerror(errno));
  return Pipe{fds[0], fds[1]};
}

void ClosePipes(std::initializer_list<Pipe> pipes) {
  for (const Pipe& pipe : pipes) {
    if (pipe.read >= 0) ::close(pipe.read);
    if (pipe.write >= 0) ::close(pipe.write);
  }
}

Result<pid_t> Spawn(const LaunchRequest& request, const Pipe& in,
                    const Pipe& out, const Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> args{request.executable};
  args.insert(args.end(), request.args.begin(), request.args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, request.executable.c_str(), &actions, &attr,
                         argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status(rc == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                  "spawn " + request.executable + ": " + std::strerror(rc));
  }
  return pid;
}

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  explicit PosixProcessLauncher(asio::io_context& io) : io_(io) {
    ::signal(SIGPIPE, SIG_IGN);
  }

  Result<std::unique_ptr<Process>> Launch(const LaunchRequest& request,
                                          ProcessHandlers handlers) override {
    Result<Pipe> in = MakePipe();
    Result<Pipe> out = in.ok() ? MakePipe() : in;
    Result<Pipe> err = out.ok() ? MakePipe() : out;
    if (!err.ok()) {
      ClosePipes({in.ok() ? *in : Pipe{}, out.ok() ? *out : Pipe{}});
      return err.status();
    }
    Result<pid_t> pid = Spawn(request, *in, *out, *err);
    ::close(in->read);
    ::close(out->write);
    ::close(err->write);
    if (!pid.ok()) {
      ClosePipes({{-1, in->write}, {out->read, -1}, {err->read, -1}});
      return pid.status();
    }
    auto child = std::make_shared<Child>(io_, *pid, in->write, out->read,
                                         err->read, std::move(handlers));
    child->Start(request.stdin_bytes, request.timeout);
    return std::unique_ptr<Process>(new PosixProcess(std::move(child)));
  }

 private:
  asio::io_context& io_;
};

}  // namespace

std::string ProcessExit::Describe() const {
  switch (reason) {
    case Reason::kExited:
      return "exit status " + std::to_string(exit_code);
    case Reason::kSignaled:
      return "killed by signal " + std::to_string(signal) + " (" +
             strsignal(signal) + ")";
    case Reason::kTimedOut:
      return "timed out (process group killed)";
    case Reason::kCancelled:
      return "cancelled (process group killed)";
  }
  return "unknown";
}

std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher(
    asio::io_context& io) {
  return std::make_unique<PosixProcessLauncher>(io);
}

}  // namespace orch::agent
