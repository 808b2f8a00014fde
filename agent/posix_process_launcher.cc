#include "agent/posix_process_launcher.h"

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <deque>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "base/spawn.h"

namespace orch::agent {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::milliseconds kReapPoll{10};

// One running child. Shared with the pending asio handlers, which hold it
// weakly.
struct Child : std::enable_shared_from_this<Child> {
  Child(asio::io_context& io, pid_t pid, int in, int out, int err, ProcessHandlers h)
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
  std::deque<std::string> stdin_queue;  // front: being written
  bool writing = false;
  bool close_stdin = false;  // close once the queue is written
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

  void Start(std::string bytes, std::chrono::milliseconds timeout, bool keep_stdin_open) {
    close_stdin = !keep_stdin_open;
    Write(std::move(bytes));
    ReadStdout();
    ReadStderr();
    ArmDeadline(timeout);
    PollReap();
  }

  void ArmDeadline(std::chrono::milliseconds timeout) {
    if (reaped || detached) return;
    deadline.expires_after(timeout);  // cancels the wait armed before
    deadline.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      auto child = weak.lock();
      if (!error && child) child->Kill(ProcessExit::Reason::kTimedOut);
    });
  }

  void Write(std::string bytes) {
    if (!stdin_pipe.is_open()) return;
    if (!bytes.empty()) stdin_queue.push_back(std::move(bytes));
    WriteNext();
  }

  void CloseStdin() {
    close_stdin = true;
    WriteNext();
  }

  // Writes the queue's front, then the rest; closes stdin when asked to and the
  // queue is empty. A write error (the child closed its stdin) drops the queue.
  void WriteNext() {
    if (writing || !stdin_pipe.is_open()) return;
    if (stdin_queue.empty()) {
      if (close_stdin) {
        boost::system::error_code ignored;
        stdin_pipe.close(ignored);
      }
      return;
    }
    writing = true;
    asio::async_write(
        stdin_pipe, asio::buffer(stdin_queue.front()),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
          self->writing = false;
          if (self->detached) return;
          self->stdin_queue.pop_front();
          if (error) {
            self->stdin_queue.clear();
            boost::system::error_code ignored;
            self->stdin_pipe.close(ignored);
            return;
          }
          self->WriteNext();
        });
  }

  void ReadStdout() {
    stdout_pipe.async_read_some(
        asio::buffer(out_buffer),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
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
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          std::string& tail = self->exit.stderr_tail;
          tail.append(self->err_buffer, n);
          if (n > 0 && !self->detached && self->handlers.on_stderr) {
            self->handlers.on_stderr(std::string_view(self->err_buffer, n));
          }
          if (tail.size() > kStderrTailBytes) tail.erase(0, tail.size() - kStderrTailBytes);
          if (error || self->detached) {
            self->stderr_done = true;
            self->MaybeReport();
            return;
          }
          self->ReadStderr();
        });
  }

  void PollReap() {
    Result<std::optional<ChildExit>> status = WaitForExit(pid, std::chrono::milliseconds(0));
    if (!status.ok() || status->has_value()) {  // an error: someone else reaped it
      reaped = true;
      if (!killed && status.ok()) Record(**status);
      ::kill(-pid,
             SIGKILL);  // leftovers of the group would hold the pipes open
      deadline.cancel();
      MaybeReport();
      return;
    }
    reap_timer.expires_after(kReapPoll);
    reap_timer.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      auto child = weak.lock();
      if (!error && child) child->PollReap();
    });
  }

  void Record(const ChildExit& status) {
    if (status.signaled()) {
      exit.reason = ProcessExit::Reason::kSignaled;
      exit.signal = status.signal;
    } else {
      exit.reason = ProcessExit::Reason::kExited;
      exit.exit_code = status.exit_code;
    }
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
      (void)WaitForExit(pid);
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
  explicit PosixProcess(std::shared_ptr<Child> child) : child_(std::move(child)) {}
  ~PosixProcess() override { child_->Detach(); }
  void Cancel() override { child_->Kill(ProcessExit::Reason::kCancelled); }
  void Write(std::string bytes) override { child_->Write(std::move(bytes)); }
  void CloseStdin() override { child_->CloseStdin(); }
  void SetTimeout(std::chrono::milliseconds timeout) override { child_->ArmDeadline(timeout); }

 private:
  std::shared_ptr<Child> child_;  // shared with in-flight asio handlers
};

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  explicit PosixProcessLauncher(asio::io_context& io) : io_(io) { ::signal(SIGPIPE, SIG_IGN); }

  Result<std::unique_ptr<Process>> Launch(const LaunchRequest& request,
                                          ProcessHandlers handlers) override {
    SpawnOptions options;
    options.argv.push_back(request.executable);
    options.argv.insert(options.argv.end(), request.args.begin(), request.args.end());
    options.stdin_stream = Stdio::Pipe();
    options.stdout_stream = Stdio::Pipe();
    options.stderr_stream = Stdio::Pipe();
    options.new_process_group = true;
    options.die_with_parent = true;
    options.reset_signals = true;
    Result<SpawnedChild> spawned = SpawnChild(options);
    if (!spawned.ok()) {
      return Status(spawned.status().code(), "spawn " + spawned.status().message());
    }
    auto child = std::make_shared<Child>(io_, spawned->pid, spawned->stdin_pipe.Release(),
                                         spawned->stdout_pipe.Release(),
                                         spawned->stderr_pipe.Release(), std::move(handlers));
    child->Start(request.stdin_bytes, request.timeout, request.keep_stdin_open);
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
      return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    case Reason::kTimedOut:
      return "timed out (process group killed)";
    case Reason::kCancelled:
      return "cancelled (process group killed)";
  }
  return "unknown";
}

std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher(asio::io_context& io) {
  return std::make_unique<PosixProcessLauncher>(io);
}

}  // namespace orch::agent
