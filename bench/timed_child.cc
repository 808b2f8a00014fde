#include "bench/timed_child.h"

#include "base/spawn.h"
#include "driver_protocol/frames.h"

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

void DrainAndWait(int fd, pid_t pid, bool framed, ChildRun* run) {
  FrameClock clock(run);
  int fds[] = {fd};
  ReadToEnd(fds, Clock::time_point::max(), [&](std::size_t, std::string_view bytes) {
    run->out.append(bytes);
    if (framed) clock.Scan();
  });
  Result<ChildExit> exit = WaitForExit(pid);
  run->total_ms = Milliseconds(run->start, Clock::now());
  run->exit_code = exit.ok() ? exit->ShellCode() : -1;
}

}  // namespace

double Milliseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

Result<ChildRun> RunTimedChild(const std::vector<std::string>& argv, const std::string& stdin_path,
                               bool framed) {
  SpawnOptions options;
  options.argv = argv;
  options.stdin_stream = Stdio::File(stdin_path);
  options.stdout_stream = Stdio::Pipe();
  options.stderr_stream = Stdio::Null();
  ChildRun run;
  run.start = Clock::now();
  Result<SpawnedChild> child = SpawnChild(options);
  if (!child.ok()) return IoError("cannot start " + child.status().message());
  DrainAndWait(child->stdout_pipe.get(), child->pid, framed, &run);
  return run;
}

}  // namespace orch::bench
