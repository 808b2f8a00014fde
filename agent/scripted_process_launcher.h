// ScriptedProcessLauncher: the in-memory twin of the posix launcher for tests;
// tests/agent/process_launcher_contract_test.cc holds both to one contract.
// Each Launch consumes the next Script (or fails with kNotFound when none is
// left) and plays it on the event loop: the stdout pieces, then the exit (its
// stderr_tail handed whole to on_stderr, and cut to kStderrTailBytes). A
// script with `hang` set plays its pieces and then waits for Cancel() or the
// request's timeout. Cancel() before the exit is reported turns it into
// kCancelled, as with a real child. Records every request.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "agent/process_launcher.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::agent {

struct ProcessScript {
  std::vector<std::string> stdout_pieces;
  ProcessExit exit;  // reason kExited / kSignaled and the code, signal and stderr tail
  bool hang = false;
};

class ScriptedProcessLauncher final : public ProcessLauncher {
 public:
  // `io` is borrowed and must outlive the launcher and its processes.
  explicit ScriptedProcessLauncher(boost::asio::io_context& io) : io_(io) {}

  void Push(ProcessScript script) { scripts_.push_back(std::move(script)); }
  const std::vector<LaunchRequest>& launched() const { return launched_; }

  Result<std::unique_ptr<Process>> Launch(const LaunchRequest& request,
                                          ProcessHandlers handlers) override;

 private:
  boost::asio::io_context& io_;
  std::deque<ProcessScript> scripts_;
  std::vector<LaunchRequest> launched_;
};

}  // namespace orch::agent
