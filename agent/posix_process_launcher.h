// The real ProcessLauncher: SpawnChild (base/spawn.h) with the child in its own
// process group, pipes for stdin/stdout/stderr driven by Boost.Asio, exit status
// reaped by polling waitpid on the loop's timer (no SIGCHLD handler, so it
// coexists with anything else in the process). Creating it makes the process
// ignore SIGPIPE, so a driver that dies before reading its job cannot kill the
// agent; the driver starts with default signal actions and no signal blocked.
// A driver dies (SIGKILL) with the thread that launched it, so an agent that
// crashes leaves none running: launch from the event loop's thread.
#pragma once

#include <memory>

#include "agent/process_launcher.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::agent {

// `io` is borrowed and must outlive the launcher and every Process it made.
std::unique_ptr<ProcessLauncher> MakePosixProcessLauncher(boost::asio::io_context& io);

}  // namespace orch::agent
