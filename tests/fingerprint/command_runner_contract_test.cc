// One contract for every CommandRunner: the real posix runner and the scripted twin.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "fingerprint/posix_command_runner.h"
#include "fingerprint/scripted_command_runner.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::TempDir;
using testing::WriteText;

// Sets up "greet" (prints hello, exits 0) and "fail" (prints to stderr, exits 3) in
// whatever way the runner under test finds programs.
class RunnerHarness {
 public:
  virtual ~RunnerHarness() = default;
  virtual CommandRunner& runner() = 0;
};

class PosixHarness final : public RunnerHarness {
 public:
  PosixHarness() {
    Install("greet", "#!/bin/sh\necho hello \"$1\"\n");
    Install("fail", "#!/bin/sh\necho broken >&2\nexit 3\n");
    runner_ = MakePosixCommandRunner(
        {.search_path = dir_.path() + ":/usr/bin:/bin", .environment = {"PATH=/usr/bin:/bin"}});
  }
  CommandRunner& runner() override { return *runner_; }

 private:
  void Install(const std::string& name, const std::string& script) {
    WriteText(dir_ / name, script);
    ::chmod((dir_ / name).c_str(), 0755);
  }
  TempDir dir_;
  std::unique_ptr<CommandRunner> runner_;
};

class ScriptedHarness final : public RunnerHarness {
 public:
  ScriptedHarness() {
    runner_.ScriptOutput({"greet", "world"}, "hello world\n");
    CommandOutput failed;
    failed.exit_code = 3;
    failed.stderr_text = "broken\n";
    runner_.Script({"fail"}, failed);
  }
  CommandRunner& runner() override { return runner_; }

 private:
  ScriptedCommandRunner runner_;
};

// A runner under test, by name: test names (and ctest's) stay the same in every run,
// where a bare factory prints as its bytes.
struct HarnessKind {
  std::string name;
  std::function<std::unique_ptr<RunnerHarness>()> make;
  friend void PrintTo(const HarnessKind& kind, std::ostream* out) { *out << kind.name; }
};

class CommandRunnerContractTest : public ::testing::TestWithParam<HarnessKind> {
 protected:
  std::unique_ptr<RunnerHarness> harness_ = GetParam().make();
};

TEST_P(CommandRunnerContractTest, ReturnsStdoutOfASuccessfulCommand) {
  Result<CommandOutput> output = harness_->runner().Run({"greet", "world"});
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  EXPECT_EQ(output->exit_code, 0);
  EXPECT_EQ(output->stdout_text, "hello world\n");
}

TEST_P(CommandRunnerContractTest, NonZeroExitIsAValueNotAnError) {
  Result<CommandOutput> output = harness_->runner().Run({"fail"});
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  EXPECT_EQ(output->exit_code, 3);
  EXPECT_EQ(output->stderr_text, "broken\n");
}

TEST_P(CommandRunnerContractTest, MissingProgramIsNotFound) {
  Result<CommandOutput> output = harness_->runner().Run({"no-such-tool-anywhere"});
  EXPECT_EQ(output.status().code(), StatusCode::kNotFound);
  EXPECT_NE(output.status().message().find("no-such-tool-anywhere"), std::string::npos);
}

auto KindName = [](const ::testing::TestParamInfo<HarnessKind>& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Posix, CommandRunnerContractTest,
                         ::testing::Values(HarnessKind{
                             "Real", [] { return std::make_unique<PosixHarness>(); }}),
                         KindName);
INSTANTIATE_TEST_SUITE_P(Scripted, CommandRunnerContractTest,
                         ::testing::Values(HarnessKind{
                             "Twin", [] { return std::make_unique<ScriptedHarness>(); }}),
                         KindName);

TEST(PosixCommandRunnerTest, KillsACommandThatRunsPastTheTimeout) {
  auto runner = MakePosixCommandRunner({.search_path = "/usr/bin:/bin",
                                        .environment = {},
                                        .timeout = std::chrono::milliseconds(200)});
  auto start = std::chrono::steady_clock::now();
  Result<CommandOutput> output = runner->Run({"sleep", "30"});
  EXPECT_EQ(output.status().code(), StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(PosixCommandRunnerTest, CapsOutputAtTheConfiguredSize) {
  auto runner = MakePosixCommandRunner(
      {.search_path = "/usr/bin:/bin", .environment = {}, .max_output_bytes = 10});
  Result<CommandOutput> output = runner->Run({"head", "-c", "100000", "/dev/zero"});
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  EXPECT_EQ(output->stdout_text.size(), 10u);
}

TEST(PosixCommandRunnerTest, PassesOnlyTheGivenEnvironment) {
  auto runner =
      MakePosixCommandRunner({.search_path = "/usr/bin:/bin", .environment = {"ORCH_PROBE=yes"}});
  Result<CommandOutput> output = runner->Run({"env"});
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(output->stdout_text, "ORCH_PROBE=yes\n");
}

TEST(ScriptedCommandRunnerTest, RecordsEveryCall) {
  ScriptedCommandRunner runner;
  (void)runner.Run({"nvidia-smi", "-L"});
  (void)runner.Run({"rocm-smi"});
  EXPECT_EQ(runner.calls().size(), 2u);
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"nvidia-smi", "-L"}));
}

}  // namespace
}  // namespace orch::fingerprint
