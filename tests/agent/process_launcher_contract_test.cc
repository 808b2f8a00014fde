// One contract (agent/process_launcher.h) for every ProcessLauncher: the real posix
// launcher, running /bin/sh scripts, and the scripted twin, playing the same drivers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "agent/posix_process_launcher.h"
#include "agent/scripted_process_launcher.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// What a launched driver does, in terms both launchers can play.
struct Driver {
  enum class End { kExit, kSignal, kHang, kEchoStdin };
  std::vector<std::string> stdout_lines;  // each written with a '\n'
  std::string stderr_text;                // written after the lines
  End end = End::kExit;
  int value = 0;  // the exit code (kExit) or the signal (kSignal)
  // Ends only after 2 s (a real driver; the twin's end is never seen before the loop
  // runs), so that what comes first is certain.
  bool slow = false;
};

class LauncherHarness {
 public:
  virtual ~LauncherHarness() = default;
  virtual ProcessLauncher& launcher() = 0;
  // The request that launches `driver`.
  virtual LaunchRequest Prepare(const Driver& driver, std::string stdin_bytes,
                                std::chrono::milliseconds timeout) = 0;
  // A request whose executable does not exist.
  virtual LaunchRequest Missing() = 0;
};

class PosixHarness final : public LauncherHarness {
 public:
  explicit PosixHarness(boost::asio::io_context& io) : launcher_(MakePosixProcessLauncher(io)) {}
  ProcessLauncher& launcher() override { return *launcher_; }

  // The lines and the stderr text must not hold a single quote.
  LaunchRequest Prepare(const Driver& driver, std::string stdin_bytes,
                        std::chrono::milliseconds timeout) override {
    std::string script = driver.slow ? "sleep 2; " : "";
    for (const std::string& line : driver.stdout_lines) script += "printf '%s\\n' '" + line + "'; ";
    if (!driver.stderr_text.empty()) script += "printf '%s' '" + driver.stderr_text + "' >&2; ";
    switch (driver.end) {
      case Driver::End::kExit:
        script += "exit " + std::to_string(driver.value);
        break;
      case Driver::End::kSignal:
        script += "kill -" + std::to_string(driver.value) + " $$";
        break;
      case Driver::End::kHang:
        script += "exec sleep 60";
        break;
      case Driver::End::kEchoStdin:
        script += "exec cat";
        break;
    }
    return {"/bin/sh", {"-c", script}, std::move(stdin_bytes), timeout};
  }
  LaunchRequest Missing() override { return {"/nonexistent/orch-driver", {}, "", 1s}; }

 private:
  std::unique_ptr<ProcessLauncher> launcher_;
};

class ScriptedHarness final : public LauncherHarness {
 public:
  explicit ScriptedHarness(boost::asio::io_context& io) : launcher_(io) {}
  ProcessLauncher& launcher() override { return launcher_; }

  LaunchRequest Prepare(const Driver& driver, std::string stdin_bytes,
                        std::chrono::milliseconds timeout) override {
    ProcessScript script;
    for (const std::string& line : driver.stdout_lines) script.stdout_pieces.push_back(line + "\n");
    script.exit.stderr_tail = driver.stderr_text;
    switch (driver.end) {
      case Driver::End::kExit:
        script.exit.exit_code = driver.value;
        break;
      case Driver::End::kSignal:
        script.exit.reason = ProcessExit::Reason::kSignaled;
        script.exit.signal = driver.value;
        break;
      case Driver::End::kHang:
        script.hang = true;
        break;
      case Driver::End::kEchoStdin:
        script.stdout_pieces.push_back(stdin_bytes);
        script.exit.exit_code = 0;
        break;
    }
    launcher_.Push(std::move(script));
    return {"/opt/driver", {}, std::move(stdin_bytes), timeout};
  }
  LaunchRequest Missing() override { return {"/opt/missing-driver", {}, "", 1s}; }

 private:
  ScriptedProcessLauncher launcher_;
};

struct LauncherKind {
  std::string name;
  std::function<std::unique_ptr<LauncherHarness>(boost::asio::io_context&)> make;
};
void PrintTo(const LauncherKind& kind, std::ostream* out) { *out << kind.name; }

// Everything the caller saw, in order: 'o' stdout, 'e' stderr, 'x' exit.
struct Seen {
  std::string out;
  std::string err;
  std::vector<ProcessExit> exits;
  std::string order;
  int inside_a_call = 0;  // callbacks that ran inside Launch or Cancel
};

class ProcessLauncherContractTest : public ::testing::TestWithParam<LauncherKind> {
 protected:
  Result<std::unique_ptr<Process>> Launch(const LaunchRequest& request) {
    in_call_ = true;
    Result<std::unique_ptr<Process>> process = harness_->launcher().Launch(
        request, {[this](std::string_view bytes) { Note('o', bytes, seen_.out); },
                  [this](ProcessExit exit) {
                    Note('x', "", seen_.err);
                    seen_.exits.push_back(std::move(exit));
                  },
                  [this](std::string_view bytes) { Note('e', bytes, seen_.err); }});
    in_call_ = false;
    return process;
  }

  void Cancel(Process& process) {
    in_call_ = true;
    process.Cancel();
    in_call_ = false;
  }

  // Runs the loop until `done` holds or 10 s pass.
  void RunUntil(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io_.run_for(10ms);
  }
  void RunUntilExit() {
    RunUntil([this] { return !seen_.exits.empty(); });
  }

  // Launches `driver` and runs it to its exit.
  void RunToExit(const Driver& driver, std::string stdin_bytes = "",
                 std::chrono::milliseconds timeout = 10s) {
    Result<std::unique_ptr<Process>> process =
        Launch(harness_->Prepare(driver, std::move(stdin_bytes), timeout));
    ASSERT_TRUE(process.ok()) << process.status().ToString();
    RunUntilExit();
    io_.run_for(20ms);  // nothing may follow the exit
  }

  boost::asio::io_context io_;
  std::unique_ptr<LauncherHarness> harness_ = GetParam().make(io_);
  Seen seen_;

 private:
  void Note(char event, std::string_view bytes, std::string& sink) {
    if (in_call_) ++seen_.inside_a_call;
    seen_.order.push_back(event);
    sink.append(bytes);
  }
  bool in_call_ = false;
};

TEST_P(ProcessLauncherContractTest, HandsOverStdoutInOrderThenOneExit) {
  RunToExit({{"hello", "record 1", "done"}, "warming up\n", Driver::End::kExit, 3});
  EXPECT_EQ(seen_.out, "hello\nrecord 1\ndone\n");
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.order.back(), 'x') << seen_.order;
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kExited);
  EXPECT_EQ(seen_.exits[0].exit_code, 3);
  EXPECT_EQ(seen_.exits[0].Describe(), "exit status 3");
  EXPECT_EQ(seen_.exits[0].stderr_tail, "warming up\n");
  EXPECT_EQ(seen_.err, "warming up\n");
  EXPECT_EQ(seen_.inside_a_call, 0);
}

TEST_P(ProcessLauncherContractTest, WritesTheJobToStdinAndClosesIt) {
  RunToExit({{}, "", Driver::End::kEchoStdin, 0}, R"({"job_id":"job-1"})");
  EXPECT_EQ(seen_.out, R"({"job_id":"job-1"})");
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kExited);
  EXPECT_EQ(seen_.exits[0].exit_code, 0);
}

TEST_P(ProcessLauncherContractTest, ReportsTheSignalThatEndedIt) {
  RunToExit({{"record 1"}, "crashing\n", Driver::End::kSignal, SIGABRT});
  EXPECT_EQ(seen_.out, "record 1\n");
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kSignaled);
  EXPECT_EQ(seen_.exits[0].signal, SIGABRT);
  EXPECT_THAT(seen_.exits[0].Describe(), HasSubstr("killed by signal 6"));
  EXPECT_EQ(seen_.exits[0].stderr_tail, "crashing\n");
}

TEST_P(ProcessLauncherContractTest, KeepsOnlyTheTailOfALongStderr) {
  std::string log;
  while (log.size() < 3 * kStderrTailBytes) log += "log line " + std::to_string(log.size()) + "\n";
  RunToExit({{}, log, Driver::End::kExit, 0});
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.err, log) << "on_stderr sees all of it";
  EXPECT_EQ(seen_.exits[0].stderr_tail, log.substr(log.size() - kStderrTailBytes));
}

TEST_P(ProcessLauncherContractTest, TimeoutKillsAHungDriver) {
  RunToExit({{"hello"}, "loading\n", Driver::End::kHang, 0}, "", 1s);
  EXPECT_EQ(seen_.out, "hello\n");
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kTimedOut);
  EXPECT_EQ(seen_.exits[0].exit_code, -1);
  EXPECT_EQ(seen_.exits[0].signal, 0);
  EXPECT_EQ(seen_.exits[0].stderr_tail, "loading\n");
}

TEST_P(ProcessLauncherContractTest, CancelKillsARunningDriverOnce) {
  Result<std::unique_ptr<Process>> process =
      Launch(harness_->Prepare({{"hello"}, "", Driver::End::kHang, 0}, "", 30s));
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  RunUntil([this] { return !seen_.out.empty(); });
  Cancel(**process);
  Cancel(**process);  // idempotent
  RunUntilExit();
  io_.run_for(20ms);
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kCancelled);
  EXPECT_EQ(seen_.exits[0].exit_code, -1);
  EXPECT_EQ(seen_.inside_a_call, 0);
}

TEST_P(ProcessLauncherContractTest, CancelBeforeTheDriverEndsWins) {
  Result<std::unique_ptr<Process>> process =
      Launch(harness_->Prepare({{}, "", Driver::End::kExit, 0, /*slow=*/true}, "", 10s));
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  Cancel(**process);  // before the loop ran: the launcher has not seen it end
  RunUntilExit();
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kCancelled);
  EXPECT_EQ(seen_.inside_a_call, 0);
}

TEST_P(ProcessLauncherContractTest, CancelAfterTheExitChangesNothing) {
  Result<std::unique_ptr<Process>> process =
      Launch(harness_->Prepare({{"done"}, "", Driver::End::kExit, 0}, "", 10s));
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  RunUntilExit();
  Cancel(**process);
  io_.run_for(50ms);
  ASSERT_EQ(seen_.exits.size(), 1u);
  EXPECT_EQ(seen_.exits[0].reason, ProcessExit::Reason::kExited);
  EXPECT_EQ(seen_.exits[0].exit_code, 0);
}

TEST_P(ProcessLauncherContractTest, MissingExecutableFailsAtLaunchWithoutCallbacks) {
  LaunchRequest request = harness_->Missing();
  Result<std::unique_ptr<Process>> process = Launch(request);
  ASSERT_FALSE(process.ok());
  EXPECT_EQ(process.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(process.status().message(), HasSubstr(request.executable));
  io_.run_for(50ms);
  EXPECT_EQ(seen_.order, "");
}

TEST_P(ProcessLauncherContractTest, DestroyingAProcessStopsItsCallbacks) {
  {
    Result<std::unique_ptr<Process>> process =
        Launch(harness_->Prepare({{"hello", "more"}, "", Driver::End::kHang, 0}, "", 200ms));
    ASSERT_TRUE(process.ok()) << process.status().ToString();
  }
  io_.run_for(400ms);  // past the timeout
  EXPECT_EQ(seen_.order, "");
}

auto KindName(const ::testing::TestParamInfo<LauncherKind>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Posix, ProcessLauncherContractTest,
                         ::testing::Values(LauncherKind{"Real",
                                                        [](boost::asio::io_context& io) {
                                                          return std::unique_ptr<LauncherHarness>(
                                                              new PosixHarness(io));
                                                        }}),
                         KindName);
INSTANTIATE_TEST_SUITE_P(Scripted, ProcessLauncherContractTest,
                         ::testing::Values(LauncherKind{"Twin",
                                                        [](boost::asio::io_context& io) {
                                                          return std::unique_ptr<LauncherHarness>(
                                                              new ScriptedHarness(io));
                                                        }}),
                         KindName);

}  // namespace
}  // namespace orch::agent
