#include "agent/scripted_process_launcher.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

namespace orch::agent {
namespace {

namespace asio = boost::asio;

struct Play : std::enable_shared_from_this<Play> {
  Play(asio::io_context& io, ProcessScript s, ProcessHandlers h)
      : script(std::move(s)), handlers(std::move(h)), deadline(io) {}

  ProcessScript script;
  ProcessHandlers handlers;
  asio::steady_timer deadline;
  std::optional<ProcessExit::Reason> killed;  // Cancel or the timeout came first
  bool done = false;
  bool detached = false;
  std::vector<std::string> written;  // Write()'s bytes, kept for nothing but the contract
  bool stdin_closed = false;

  void ArmDeadline(std::chrono::milliseconds timeout) {
    deadline.expires_after(timeout);
    deadline.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      auto self = weak.lock();
      if (!error && self) self->Kill(ProcessExit::Reason::kTimedOut);
    });
  }

  // Reports the scripted exit, or the kill that came before it was reported (as the
  // real launcher does: a child that was killed has no exit code or signal of its own).
  void Finish() {
    if (done || detached) return;
    done = true;
    deadline.cancel();
    ProcessExit exit = script.exit;
    if (killed) exit = ProcessExit{*killed, -1, 0, std::move(exit.stderr_tail)};
    if (handlers.on_stderr && !exit.stderr_tail.empty()) handlers.on_stderr(exit.stderr_tail);
    if (exit.stderr_tail.size() > kStderrTailBytes)
      exit.stderr_tail.erase(0, exit.stderr_tail.size() - kStderrTailBytes);
    handlers.on_exit(std::move(exit));
  }

  // Decides the reason now; the exit is reported on the loop.
  void Kill(ProcessExit::Reason reason) {
    if (done || detached) return;
    if (!killed) killed = reason;
    asio::post(deadline.get_executor(), [self = shared_from_this()] { self->Finish(); });
  }
};

class ScriptedProcess final : public Process {
 public:
  explicit ScriptedProcess(std::shared_ptr<Play> play) : play_(std::move(play)) {}
  ~ScriptedProcess() override {
    play_->detached = true;
    play_->deadline.cancel();
  }
  void Cancel() override { play_->Kill(ProcessExit::Reason::kCancelled); }
  void Write(std::string bytes) override {
    if (!play_->stdin_closed) play_->written.push_back(std::move(bytes));
  }
  void CloseStdin() override { play_->stdin_closed = true; }
  void SetTimeout(std::chrono::milliseconds timeout) override {
    if (play_->done || play_->detached || !play_->script.hang) return;
    play_->ArmDeadline(timeout);
  }

 private:
  std::shared_ptr<Play> play_;
};

}  // namespace

Result<std::unique_ptr<Process>> ScriptedProcessLauncher::Launch(const LaunchRequest& request,
                                                                 ProcessHandlers handlers) {
  launched_.push_back(request);
  if (scripts_.empty()) return NotFound("no script left for " + request.executable);
  auto play = std::make_shared<Play>(io_, std::move(scripts_.front()), std::move(handlers));
  scripts_.pop_front();
  for (std::size_t i = 0; i < play->script.stdout_pieces.size(); ++i) {
    asio::post(io_, [play, i] {
      if (!play->done && !play->detached) {
        play->handlers.on_stdout(play->script.stdout_pieces[i]);
      }
    });
  }
  if (play->script.hang) {
    play->ArmDeadline(request.timeout);
  } else {
    asio::post(io_, [play] { play->Finish(); });
  }
  return std::unique_ptr<Process>(new ScriptedProcess(play));
}

}  // namespace orch::agent
