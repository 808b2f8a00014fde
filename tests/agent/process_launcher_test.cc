// The real launcher with the test driver: ok, crash, hang + timeout (process
// group killed), error exit, cancel, missing executable, death with the launching
// thread.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <optional>
#include <thread>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "driver_protocol/frames.h"
#include "agent/posix_process_launcher.h"
#include "agent/scripted_process_launcher.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string TestDriver() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-test-driver";
}

std::string Job(const std::string& behaviour, int positions = 4) {
  return R"({"job_id":"job-1","coordinate":{"knob.positions":")" + std::to_string(positions) +
         R"(","knob.behaviour":")" + behaviour + R"("}})";
}

struct Outcome {
  std::string out;
  std::string err;  // through on_stderr
  std::optional<ProcessExit> exit;
};

class ProcessLauncherTest : public ::testing::Test {
 protected:
  // Launches, then runs the loop until the exit is reported or 10 s pass.
  Outcome Run(const LaunchRequest& request, bool cancel_after_start = false) {
    Outcome outcome;
    auto launcher = MakePosixProcessLauncher(io_);
    Result<std::unique_ptr<Process>> process = launcher->Launch(
        request, {[&outcome](std::string_view bytes) { outcome.out.append(bytes); },
                  [&outcome](ProcessExit exit) { outcome.exit = std::move(exit); },
                  [&outcome](std::string_view bytes) { outcome.err.append(bytes); }});
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    if (!process.ok()) return outcome;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    bool cancelled = false;
    while (!outcome.exit && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(20ms);
      if (cancel_after_start && !cancelled && !outcome.out.empty()) {
        (*process)->Cancel();
        cancelled = true;
      }
    }
    return outcome;
  }

  boost::asio::io_context io_;
};

TEST_F(ProcessLauncherTest, RunsTheDriverAndCollectsItsFrames) {
  Outcome outcome = Run({TestDriver(), {}, Job("ok", 3), 10s});
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kExited);
  EXPECT_EQ(outcome.exit->exit_code, 0);
  EXPECT_THAT(outcome.exit->stderr_tail, HasSubstr("3 positions"));
  EXPECT_EQ(outcome.err, outcome.exit->stderr_tail) << "the whole stderr, in order";
  driver_protocol::DriverFrameParser parser;
  std::vector<driver_protocol::DriverFrame> frames;
  ASSERT_TRUE(parser.Feed(outcome.out, &frames).ok());
  EXPECT_TRUE(parser.Finish().ok());
  EXPECT_EQ(frames.size(), 5u);  // hello, 3 records, done
}

// The frames in `out`, by type and payload (a session writes several streams).
std::vector<driver_protocol::DriverFrame> SplitFrames(const std::string& out) {
  std::vector<driver_protocol::DriverFrame> frames;
  std::size_t at = 0;
  while (out.size() - at >= 5) {
    std::uint32_t length = 0;
    for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<std::uint8_t>(out[at + i]);
    if (out.size() - at - 5 < length) break;
    frames.push_back(
        {static_cast<driver_protocol::DriverFrameType>(out[at + 4]), out.substr(at + 5, length)});
    at += 5 + length;
  }
  return frames;
}

TEST_F(ProcessLauncherTest, AKeptOpenStdinTakesMoreJobsUntilItIsClosed) {
  using driver_protocol::DriverFrameType;
  using driver_protocol::EncodeDriverFrame;
  Outcome outcome;
  auto launcher = MakePosixProcessLauncher(io_);
  Result<std::unique_ptr<Process>> process =
      launcher->Launch({TestDriver(),
                        {"session"},
                        EncodeDriverFrame(DriverFrameType::kJob, Job("ok", 2)),
                        10s,
                        /*keep_stdin_open=*/true},
                       {[&outcome](std::string_view bytes) { outcome.out.append(bytes); },
                        [&outcome](ProcessExit exit) { outcome.exit = std::move(exit); }, nullptr});
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  auto dones = [&] {
    int count = 0;
    for (const auto& frame : SplitFrames(outcome.out))
      count += frame.type == DriverFrameType::kDone;
    return count;
  };
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (dones() < 1 && !outcome.exit && std::chrono::steady_clock::now() < deadline) {
    io_.run_for(20ms);
  }
  ASSERT_EQ(dones(), 1);
  EXPECT_FALSE(outcome.exit.has_value()) << "the session waits for its next job";
  (*process)->Write(EncodeDriverFrame(DriverFrameType::kJob, Job("ok", 3)));
  (*process)->SetTimeout(10s);
  (*process)->CloseStdin();
  while (!outcome.exit && std::chrono::steady_clock::now() < deadline) io_.run_for(20ms);
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->Describe(), "exit status 0") << "end of file ends the session";
  std::vector<driver_protocol::DriverFrame> frames = SplitFrames(outcome.out);
  ASSERT_EQ(frames.size(), 9u);  // hello, 2 records, done; hello, 3 records, done
  EXPECT_THAT(frames[4].payload, HasSubstr(R"("jobs_before":1)"));
}

TEST_F(ProcessLauncherTest, SetTimeoutRestartsTheTimeout) {
  Outcome outcome;
  auto launcher = MakePosixProcessLauncher(io_);
  Result<std::unique_ptr<Process>> process =
      launcher->Launch({TestDriver(), {"session"}, "", 30s, /*keep_stdin_open=*/true},
                       {[&outcome](std::string_view bytes) { outcome.out.append(bytes); },
                        [&outcome](ProcessExit exit) { outcome.exit = std::move(exit); }, nullptr});
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  (*process)->SetTimeout(100ms);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!outcome.exit && std::chrono::steady_clock::now() < deadline) io_.run_for(20ms);
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kTimedOut);
}

TEST_F(ProcessLauncherTest, ReportsACrashWithItsSignalAndLogTail) {
  Outcome outcome = Run({TestDriver(), {}, Job("crash"), 10s});
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kSignaled);
  EXPECT_EQ(outcome.exit->signal, SIGABRT);
  EXPECT_THAT(outcome.exit->stderr_tail, HasSubstr("crashing after 2 records"));
}

TEST_F(ProcessLauncherTest, TimeoutKillsTheWholeProcessGroup) {
  Outcome outcome = Run({TestDriver(), {}, Job("hang"), 500ms});
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kTimedOut);
  std::string tail = outcome.exit->stderr_tail;
  auto at = tail.find("grandchild pid ");
  ASSERT_NE(at, std::string::npos) << tail;
  pid_t grandchild = std::stoi(tail.substr(at + 15));
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (::kill(grandchild, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // bounded poll: init reaps the orphan
  }
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ProcessLauncherTest, ReportsAnErrorExit) {
  Outcome outcome = Run({TestDriver(), {}, Job("exit3"), 10s});
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kExited);
  EXPECT_EQ(outcome.exit->exit_code, 3);
  EXPECT_EQ(outcome.exit->Describe(), "exit status 3");
}

TEST_F(ProcessLauncherTest, CancelKillsARunningDriver) {
  Outcome outcome = Run({TestDriver(), {}, Job("hang"), 30s}, /*cancel_after_start=*/true);
  ASSERT_TRUE(outcome.exit.has_value());
  EXPECT_EQ(outcome.exit->reason, ProcessExit::Reason::kCancelled);
}

TEST_F(ProcessLauncherTest, MissingExecutableFailsAtLaunch) {
  auto launcher = MakePosixProcessLauncher(io_);
  Result<std::unique_ptr<Process>> process = launcher->Launch(
      {"/nonexistent/driver", {}, "", 1s}, {[](std::string_view) {}, [](ProcessExit) {}, {}});
  ASSERT_FALSE(process.ok());
  EXPECT_EQ(process.status().code(), StatusCode::kNotFound);
}

TEST_F(ProcessLauncherTest, DestroyingAProcessKillsItWithoutCallbacks) {
  auto launcher = MakePosixProcessLauncher(io_);
  bool exited = false;
  {
    Result<std::unique_ptr<Process>> process =
        launcher->Launch({TestDriver(), {}, Job("hang"), 30s},
                         {[](std::string_view) {}, [&exited](ProcessExit) { exited = true; }, {}});
    ASSERT_TRUE(process.ok());
    io_.run_for(50ms);
  }
  io_.run_for(50ms);
  EXPECT_FALSE(exited);
}

TEST_F(ProcessLauncherTest, ADriverDiesWithTheThreadThatLaunchedIt) {
  auto launcher = MakePosixProcessLauncher(io_);
  std::optional<ProcessExit> exit;
  std::unique_ptr<Process> process;
  std::thread launching([&] {
    Result<std::unique_ptr<Process>> launched = launcher->Launch(
        {TestDriver(), {}, Job("hang"), 30s},
        {[](std::string_view) {}, [&exit](ProcessExit e) { exit = std::move(e); }, {}});
    ASSERT_TRUE(launched.ok()) << launched.status().ToString();
    process = std::move(launched).value();
  });
  launching.join();  // the kernel sends the driver SIGKILL (PR_SET_PDEATHSIG)
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!exit && std::chrono::steady_clock::now() < deadline) io_.run_for(20ms);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->reason, ProcessExit::Reason::kSignaled);
  EXPECT_EQ(exit->signal, SIGKILL);
}

TEST(ScriptedProcessLauncherTest, PlaysTheScriptAndRecordsTheRequest) {
  boost::asio::io_context io;
  ScriptedProcessLauncher launcher(io);
  launcher.Push({{"ab", "c"}, {ProcessExit::Reason::kExited, 0, 0, "log\n"}, false});
  std::string out;
  std::string err;
  std::optional<ProcessExit> exit;
  Result<std::unique_ptr<Process>> process = launcher.Launch(
      {"/bin/driver", {}, "job", 1s},
      {[&out](std::string_view bytes) { out.append(bytes); }, [&exit](ProcessExit e) { exit = e; },
       [&err](std::string_view bytes) { err.append(bytes); }});
  ASSERT_TRUE(process.ok());
  io.run_for(50ms);
  EXPECT_EQ(out, "abc");
  EXPECT_EQ(err, "log\n");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(launcher.launched()[0].stdin_bytes, "job");
  EXPECT_FALSE(launcher.Launch({"/bin/driver", {}, "", 1s}, {}).ok());  // no script left
}

}  // namespace
}  // namespace orch::agent
