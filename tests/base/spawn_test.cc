// SpawnChild and the waits, with real child processes (/bin/sh, /bin/cat, env, pwd).
// Most cases run twice: through posix_spawn and through fork + exec (die_with_parent).
#include "base/spawn.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace orch {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string ReadAll(const UniqueFd& fd) {
  std::string text;
  int fds[] = {fd.get()};
  EXPECT_TRUE(ReadToEnd(fds, std::chrono::steady_clock::now() + 30s,
                        [&text](std::size_t, std::string_view bytes) { text.append(bytes); }));
  return text;
}

ChildExit Reap(const SpawnedChild& child) {
  Result<ChildExit> exit = WaitForExit(child.pid);
  EXPECT_TRUE(exit.ok()) << exit.status().ToString();
  return exit.ok() ? *exit : ChildExit{};
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "spawn-test-XXXXXX");
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The parameter is die_with_parent: false starts through posix_spawn, true through fork.
class SpawnTest : public ::testing::TestWithParam<bool> {
 protected:
  SpawnOptions Shell(const std::string& script) {
    SpawnOptions options;
    options.argv = {"/bin/sh", "-c", script};
    options.die_with_parent = GetParam();
    return options;
  }
  Result<SpawnedChild> Start(SpawnOptions options) {
    options.die_with_parent = GetParam();
    return SpawnChild(options);
  }
};

TEST_P(SpawnTest, ReportsTheExitCode) {
  Result<SpawnedChild> child = Start(Shell("exit 7"));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ChildExit exit = Reap(*child);
  EXPECT_EQ(exit.exit_code, 7);
  EXPECT_FALSE(exit.signaled());
  EXPECT_EQ(exit.ShellCode(), 7);
}

TEST_P(SpawnTest, ReportsTheSignalThatKilledIt) {
  Result<SpawnedChild> child = Start(Shell("kill -TERM $$"));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ChildExit exit = Reap(*child);
  EXPECT_EQ(exit.signal, SIGTERM);
  EXPECT_EQ(exit.ShellCode(), 128 + SIGTERM);
}

TEST_P(SpawnTest, PipesBytesInAndOut) {
  SpawnOptions options;
  options.argv = {"/bin/cat"};
  options.stdin_stream = Stdio::Pipe();
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ASSERT_EQ(::write(child->stdin_pipe.get(), "ping\n", 5), 5);
  child->stdin_pipe.Reset();  // end of input: cat ends
  EXPECT_EQ(ReadAll(child->stdout_pipe), "ping\n");
  EXPECT_EQ(Reap(*child).exit_code, 0);
}

TEST_P(SpawnTest, KeepsStdoutAndStderrApartOrTogether) {
  SpawnOptions apart = Shell("echo out; echo err >&2");
  apart.stdout_stream = Stdio::Pipe();
  apart.stderr_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(apart);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(ReadAll(child->stdout_pipe), "out\n");
  EXPECT_EQ(ReadAll(child->stderr_pipe), "err\n");
  Reap(*child);

  SpawnOptions together = Shell("echo out; echo err >&2");
  together.stdout_stream = Stdio::Pipe();
  together.stderr_stream = Stdio::Stdout();
  child = Start(together);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_FALSE(child->stderr_pipe.valid());
  EXPECT_EQ(ReadAll(child->stdout_pipe), "out\nerr\n");
  Reap(*child);
}

TEST_P(SpawnTest, ParentEndsAreCloseOnExec) {
  SpawnOptions options = Shell("cat");
  options.stdin_stream = Stdio::Pipe();
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(::fcntl(child->stdin_pipe.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(::fcntl(child->stdout_pipe.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  child->stdin_pipe.Reset();
  EXPECT_EQ(ReadAll(child->stdout_pipe), "");
  Reap(*child);
}

TEST_P(SpawnTest, AddsToTheInheritedEnvironment) {
  ASSERT_EQ(::setenv("ORCH_SPAWN_INHERITED", "kept", 1), 0);
  ASSERT_EQ(::setenv("ORCH_SPAWN_REPLACED", "old", 1), 0);
  SpawnOptions options = Shell("echo $ORCH_SPAWN_INHERITED $ORCH_SPAWN_REPLACED $ORCH_SPAWN_ADDED");
  options.environment = {"ORCH_SPAWN_REPLACED=new", "ORCH_SPAWN_ADDED=added"};
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ::unsetenv("ORCH_SPAWN_INHERITED");
  ::unsetenv("ORCH_SPAWN_REPLACED");
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(ReadAll(child->stdout_pipe), "kept new added\n");
  Reap(*child);
}

TEST_P(SpawnTest, ReplacesTheEnvironment) {
  SpawnOptions options;
  options.argv = {"/usr/bin/env"};
  options.inherit_environment = false;
  options.environment = {"ONLY=this"};
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(ReadAll(child->stdout_pipe), "ONLY=this\n");
  Reap(*child);
}

TEST_P(SpawnTest, RunsInTheGivenWorkingDirectory) {
  TempDir dir;
  SpawnOptions options;
  options.argv = {"/bin/pwd", "-P"};
  options.working_directory = dir.path().string();
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(ReadAll(child->stdout_pipe), std::filesystem::canonical(dir.path()).string() + "\n");
  Reap(*child);
}

TEST_P(SpawnTest, ReadsAndAppendsFiles) {
  TempDir dir;
  std::ofstream(dir.path() / "in.txt") << "from a file\n";
  for (int run = 0; run < 2; ++run) {
    SpawnOptions options = Shell("cat; echo err >&2");
    options.working_directory = dir.path().string();
    options.stdin_stream = Stdio::File("in.txt");  // relative to the working directory
    options.stdout_stream = Stdio::File((dir.path() / "out.txt").string());
    options.stderr_stream = Stdio::Stdout();
    Result<SpawnedChild> child = Start(options);
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    EXPECT_EQ(Reap(*child).exit_code, 0);
  }
  EXPECT_EQ(ReadFile(dir.path() / "out.txt"), "from a file\nerr\nfrom a file\nerr\n");
  struct stat info;
  ASSERT_EQ(::stat((dir.path() / "out.txt").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0711, 0600u) << "created rw for its owner, not executable";
}

TEST_P(SpawnTest, NullAndParentDescriptors) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  SpawnOptions options = Shell("cat; echo done");
  options.stdin_stream = Stdio::Null();
  options.stdout_stream = Stdio::ParentFd(write_end.get());
  options.stderr_stream = Stdio::Null();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  write_end.Reset();
  EXPECT_EQ(ReadAll(read_end), "done\n");
  Reap(*child);
}

TEST_P(SpawnTest, MissingProgramIsNotFoundAndNamesIt) {
  SpawnOptions options;
  options.argv = {"/nonexistent/orch-no-such-program"};
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(child.status().message(),
            "/nonexistent/orch-no-such-program: No such file or directory");
}

TEST_P(SpawnTest, ProgramThatCannotRunIsAnIoError) {
  TempDir dir;
  std::ofstream(dir.path() / "not-executable") << "#!/bin/sh\n";
  SpawnOptions options;
  options.argv = {(dir.path() / "not-executable").string()};
  Result<SpawnedChild> child = Start(options);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kIoError);
  EXPECT_THAT(child.status().message(), HasSubstr("not-executable: Permission denied"));
}

TEST_P(SpawnTest, MissingWorkingDirectoryFailsTheSpawn) {
  SpawnOptions options = Shell("exit 0");
  options.working_directory = "/nonexistent/orch-dir";
  Result<SpawnedChild> child = Start(options);
  ASSERT_FALSE(child.ok());
  EXPECT_THAT(child.status().message(), HasSubstr("/bin/sh: No such file or directory"));
}

TEST_P(SpawnTest, SearchesThePathWhenAsked) {
  SpawnOptions options;
  options.argv = {"sh", "-c", "exit 4"};
  options.search_path = true;
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(Reap(*child).exit_code, 4);

  options.argv = {"orch-no-such-program-anywhere"};
  child = Start(options);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(child.status().message(), HasSubstr("orch-no-such-program-anywhere"));
}

TEST_P(SpawnTest, ExecutesProgramWhileArgvZeroKeepsItsName) {
  SpawnOptions options;
  options.argv = {"short-name", "-c", "echo $0"};
  options.program = "/bin/sh";
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ(ReadAll(child->stdout_pipe), "short-name\n");
  Reap(*child);
}

TEST_P(SpawnTest, StartsANewProcessGroupOnlyWhenAsked) {
  for (bool own_group : {false, true}) {
    SpawnOptions options = Shell("read line");
    options.stdin_stream = Stdio::Pipe();
    options.new_process_group = own_group;
    Result<SpawnedChild> child = Start(options);
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    EXPECT_EQ(::getpgid(child->pid), own_group ? child->pid : ::getpgrp());
    child->stdin_pipe.Reset();
    Reap(*child);
  }
}

TEST_P(SpawnTest, ResetSignalsUndoesSignalsThisProcessIgnores) {
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGINT, &ignore, &previous), 0);
  SpawnOptions options = Shell("kill -INT $$; exit 3");
  Result<SpawnedChild> inherits = Start(options);
  options.reset_signals = true;
  Result<SpawnedChild> reset = Start(options);
  ::sigaction(SIGINT, &previous, nullptr);
  ASSERT_TRUE(inherits.ok() && reset.ok());
  EXPECT_EQ(Reap(*inherits).exit_code, 3) << "SIGINT stays ignored";
  EXPECT_EQ(Reap(*reset).signal, SIGINT);
}

TEST_P(SpawnTest, WaitWithTimeoutSeesARunningChildThenItsEnd) {
  SpawnOptions options = Shell("read line; exit 5");
  options.stdin_stream = Stdio::Pipe();
  Result<SpawnedChild> child = Start(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  Result<std::optional<ChildExit>> running = WaitForExit(child->pid, 20ms);
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  EXPECT_FALSE(running->has_value());
  child->stdin_pipe.Reset();
  Result<std::optional<ChildExit>> ended = WaitForExit(child->pid, 30s);
  ASSERT_TRUE(ended.ok() && ended->has_value());
  EXPECT_EQ((*ended)->exit_code, 5);
}

INSTANTIATE_TEST_SUITE_P(Spawn, SpawnTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ForkExec" : "PosixSpawn";
                         });

TEST(SpawnChildTest, EmptyArgvIsInvalid) {
  EXPECT_EQ(SpawnChild(SpawnOptions{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SpawnChildTest, OnlyStderrCanFollowStdout) {
  SpawnOptions options;
  options.argv = {"/bin/true"};
  options.stdin_stream = Stdio::Stdout();
  EXPECT_EQ(SpawnChild(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(FindProgramTest, SearchesTheGivenDirectoriesInOrder) {
  TempDir first;
  TempDir second;
  std::ofstream(first.path() / "tool") << "#!/bin/sh\n";  // not executable: skipped
  std::ofstream(second.path() / "tool") << "#!/bin/sh\n";
  ASSERT_EQ(::chmod((second.path() / "tool").c_str(), 0755), 0);
  std::string dirs = first.path().string() + ":" + second.path().string();
  Result<std::string> found = FindProgram("tool", dirs);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (second.path() / "tool").string());

  Result<std::string> denied = FindProgram("tool", first.path().string());
  EXPECT_EQ(denied.status().code(), StatusCode::kIoError);
  EXPECT_EQ(denied.status().message(), "tool: Permission denied");
  EXPECT_EQ(FindProgram("tool", "").status().code(), StatusCode::kNotFound) << "no directory";
  EXPECT_EQ(FindProgram("sh", "/nonexistent:/bin").value(), "/bin/sh");
}

TEST(FindProgramTest, APathMustBeAnExecutableFile) {
  EXPECT_EQ(FindProgram("/bin/sh", "").value(), "/bin/sh");
  Result<std::string> missing = FindProgram("/nonexistent/tool", "/bin");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "/nonexistent/tool: No such file or directory");
  EXPECT_FALSE(FindProgram("/tmp", "").ok()) << "a directory";
}

TEST(WaitForExitTest, WaitingForAProcessThatIsNotAChildIsAnError) {
  Result<ChildExit> exit = WaitForExit(::getpid());
  ASSERT_FALSE(exit.ok());
  EXPECT_EQ(exit.status().code(), StatusCode::kIoError);
  EXPECT_THAT(exit.status().message(), HasSubstr("pid " + std::to_string(::getpid())));
  EXPECT_FALSE(WaitForExit(::getpid(), 0ms).ok());
}

TEST(ReadToEndTest, GivesUpAtTheDeadline) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo partial; read line"};
  options.stdin_stream = Stdio::Pipe();
  options.stdout_stream = Stdio::Pipe();
  Result<SpawnedChild> child = SpawnChild(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  std::string text;
  int fds[] = {child->stdout_pipe.get()};
  auto append = [&text](std::size_t, std::string_view bytes) { text.append(bytes); };
  EXPECT_FALSE(ReadToEnd(fds, std::chrono::steady_clock::now() + 200ms, append));
  EXPECT_EQ(text, "partial\n");
  child->stdin_pipe.Reset();
  EXPECT_TRUE(ReadToEnd(fds, std::chrono::steady_clock::time_point::max(), append));
  Reap(*child);
}

// Starts, from a forked intermediate process, `/bin/sh -c "read line"` with or without
// die_with_parent; the intermediate then exits. This process is a subreaper for the
// test, so the orphaned grandchild becomes its child and its end can be observed: it gets
// `patience` to end on its own, then its stdin reaches end of file (`read` exits 1).
ChildExit GrandchildAfterItsParentExits(bool die_with_parent, std::chrono::milliseconds patience) {
  EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int report[2];
  EXPECT_EQ(::pipe2(report, O_CLOEXEC), 0);
  int keep_open[2];  // the grandchild's stdin: open until this test closes it
  EXPECT_EQ(::pipe2(keep_open, O_CLOEXEC), 0);
  pid_t intermediate = ::fork();
  if (intermediate == 0) {
    SpawnOptions options;
    options.argv = {"/bin/sh", "-c", "read line"};
    options.stdin_stream = Stdio::ParentFd(keep_open[0]);
    options.die_with_parent = die_with_parent;
    Result<SpawnedChild> child = SpawnChild(options);
    pid_t pid = child.ok() ? child->pid : -1;
    ssize_t ignored = ::write(report[1], &pid, sizeof pid);
    (void)ignored;
    ::_exit(0);
  }
  ::close(report[1]);
  ::close(keep_open[0]);
  pid_t grandchild = -1;
  EXPECT_EQ(::read(report[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(report[0]);
  EXPECT_EQ(WaitForExit(intermediate).value().exit_code, 0);
  Result<std::optional<ChildExit>> early = WaitForExit(grandchild, patience);
  ::close(keep_open[1]);
  Result<ChildExit> exit =
      early.ok() && early->has_value() ? Result<ChildExit>(**early) : WaitForExit(grandchild);
  EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
  EXPECT_TRUE(exit.ok()) << exit.status().ToString();
  return exit.ok() ? *exit : ChildExit{};
}

TEST(SpawnChildTest, DiesWithItsParentWhenAsked) {
  EXPECT_EQ(GrandchildAfterItsParentExits(true, 30s).signal, SIGKILL);
}

TEST(SpawnChildTest, OutlivesItsParentByDefault) {
  ChildExit exit = GrandchildAfterItsParentExits(false, 0ms);
  EXPECT_FALSE(exit.signaled());
  EXPECT_EQ(exit.exit_code, 1);  // `read` at end of file, after the test let it go
}

}  // namespace
}  // namespace orch
