// Runs a real child process for end-to-end tests of the binaries: captures stdout and
// stderr, waits at most `timeout`, and kills the child by pid when it overruns. The child
// dies with the test process (base/spawn.h, die_with_parent), so an aborted test leaves
// none behind.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace orch::testing {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// `stdin_path`: a file the child reads as stdin (empty: the caller's stdin).
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60),
                         const std::string& working_dir = "", const std::string& stdin_path = "");

// Path of the built `orch` binary.
std::string OrchBinary();
// Path of the built test driver (tests/support/test_driver.cc), a test double of an engine.
std::string TestDriverBinary();
// The built orch-sim-agents (tests/support/simulated_agents.h).
std::string SimAgentsBinary();

}  // namespace orch::testing
