#include "agent/scripted_process_launcher.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
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
  bool done = false;
  bool detached = false;

  void Finish(ProcessExit exit) {
    if (done || detached) return;
    done = true;
    deadline.cancel();
    if (handlers.on_stderr && !exit.stderr_tail.empty())
      handlers.on_stderr(exit.stderr_tail);
    handlers.on_exit(std::move(exit));
  }

  void Kill(ProcessExit::Reason reason) {
    ProcessExit exit = script.exit;
    exit.reason = reason;
    Finish(std::move(exit));
  }
};

class ScriptedProcess final : public Process {
 public:
  explicit ScriptedProcess(std::shared_ptr<Play> play)
      : play_(std::move(play)) {}
  ~ScriptedProcess() override {
    play_->detached = true;
    play_->deadline.cancel();
  }
  void Cancel() override {
    auto play = play_;
    asio::post(play->deadline.get_executor(),
               [play] { play->Kill(ProcessExit::Reason::kCancelled); });
  }

 private:
  std::shared_ptr<Play> play_;
};

}  // namespace

Result<std::unique_ptr<Process>> ScriptedProcessLauncher::Launch(
    const LaunchRequest& request, ProcessHandlers handlers) {
  launched_.push_back(request);
  if (scripts_.empty())
    return NotFound("no script left for " + request.executable);
  auto play = std::make_shared<Play>(io_, std::move(scripts_.front()),
                                     std::move(handlers));
  scripts_.pop_front();
  for (std::size_t i = 0; i < play->script.stdout_pieces.size(); ++i) {
    asio::post(io_, [play, i] {
      if (!play->done && !play->detached) {
        play->handlers.on_stdout(play->script.stdout_pieces[i]);
      }
    });
  }
  if (play->script.hang) {
    play->deadline.expires_after(request.timeout);
    play->deadline.async_wait([play](const boost::system::error_code& error) {
      if (!error) play->Kill(ProcessExit::Reason::kTimedOut);
    });
  } else {
    asio::post(io_, [play] { play->Finish(play->script.exit); });
  }
  return std::unique_ptr<Process>(new ScriptedProcess(play));
}

}  // namespace orch::agent
