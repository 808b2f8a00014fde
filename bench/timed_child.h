// Runs one child process for the llama.cpp driver benchmark and times it: stdin
// from a file, stdout drained through a pipe and kept, stderr discarded (engine
// logs go there). Driver frames (docs/driver-protocol.md) on stdout are split
// as they arrive, so the run records when the first hello, the first record and
// the done frame came in, a timeline of the driver from outside.
//
// Times are milliseconds since just before the spawn (SpawnChild, base/spawn.h:
// posix_spawn), on the steady clock (CLOCK_MONOTONIC, the same clock in every
// process of the machine).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::bench {

struct ChildRun {
  std::chrono::steady_clock::time_point start;  // just before SpawnChild
  int exit_code = -1;                           // 128 + the signal number when killed by one
  double total_ms = 0;                          // spawn to the end of the wait
  // When each frame had fully arrived; -1 when none did (or not `framed`).
  double hello_ms = -1;
  double first_record_ms = -1;
  double done_ms = -1;
  std::uint64_t frames = 0;
  std::uint64_t records = 0;
  std::string out;  // every byte of stdout
};

// Starts argv[0] (a path; no PATH search) and waits for it. kIoError when it
// cannot be started; a child that fails is a ChildRun with its exit code.
Result<ChildRun> RunTimedChild(const std::vector<std::string>& argv, const std::string& stdin_path,
                               bool framed);

// Milliseconds from `from` to `to`.
double Milliseconds(std::chrono::steady_clock::time_point from,
                    std::chrono::steady_clock::time_point to);

}  // namespace orch::bench
