// `orch agent` as an operator starts it: the real binary on a real spool folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/child_process.h"
#include "tests/support/scratch_folder.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A second agent started on the spool of a running one refuses to start, naming
// the spool and the first agent's pid, and the first one keeps its lock.
TEST(AgentCommandTest, ASecondAgentOnALiveAgentsSpoolRefusesToStart) {
  ScratchFolder scratch("orch-agent-lock");
  const fs::path& dir = scratch.path;
  fs::path spool = dir / "spool";
  fs::path config = dir / "agent.toml";
  // No coordinator listens there: the first agent keeps trying to register.
  std::ofstream(config) << "[agent]\nid = \"lock-1\"\ncoordinator = \"tcp://127.0.0.1:9\"\n"
                        << "spool_dir = \"" << spool.string() << "\"\nmodel_cache = \""
                        << (dir / "models").string() << "\"\n\n[[drivers]]\nname = \"test\"\n"
                        << "executable = \"" << TestDriverBinary()
                        << "\"\nengine = \"test-engine@1\"\n";
  Result<cli::ChildProcess> first = cli::ChildProcess::Start(
      {OrchBinary(), "agent", "--config", config.string()}, (dir / "first.log").string());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  std::string first_pid = std::to_string(first->pid());
  fs::path lock = spool / "agent.lock";
  bool locked = false;  // the first agent writes its pid once it holds the lock
  for (int i = 0; i < 600 && !locked && first->running(); ++i) {
    locked = Slurp(lock) == first_pid + "\n";
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(locked) << Slurp(dir / "first.log");

  ProcessResult second = RunProcess({OrchBinary(), "agent", "--config", config.string()});
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_THAT(second.err, HasSubstr("spool " + spool.string() + " is in use by another agent"));
  EXPECT_THAT(second.err, HasSubstr("pid " + first_pid));
  EXPECT_EQ(Slurp(lock), first_pid + "\n");
  EXPECT_FALSE(first->WaitFor(std::chrono::milliseconds(0)).has_value()) << "first agent exited";
  first->Stop(std::chrono::seconds(10));
}

// A launch entry whose program cannot be run: its engine is not offered, and an
// agent left with nothing to offer exits with status 2 naming the entry and path.
TEST(AgentCommandTest, AServerEntryWhoseLaunchProgramIsMissingIsNotOffered) {
  ScratchFolder scratch("orch-agent-lock");
  const fs::path& dir = scratch.path;
  fs::path driver = dir / "orch-driver-llama-server";
  std::ofstream(driver) << "#!/bin/sh\necho '{\"engine\": \"llama-server\"}'\n";
  fs::permissions(driver, fs::perms::owner_all);
  fs::path config = dir / "agent.toml";
  std::ofstream(config) << "[agent]\nid = \"srv-1\"\ncoordinator = \"tcp://127.0.0.1:9\"\n"
                        << "spool_dir = \"" << (dir / "spool").string() << "\"\n\n"
                        << "[[drivers]]\nname = \"llama-server\"\nexecutable = \""
                        << driver.string() << "\"\nengine = \"llama-server@b1\"\n\n"
                        << "[[servers]]\nengine = \"llama-server@b1\"\n"
                        << "launch = [\"bin/no-such-server\", \"--port\", \"{port}\"]\n";
  ProcessResult agent = RunProcess({OrchBinary(), "agent", "--config", config.string()});
  EXPECT_EQ(agent.exit_code, 2) << agent.err;
  EXPECT_THAT(agent.err, HasSubstr("server entry for llama-server@b1 (" + config.string() +
                                   ":11): launch program \"" +
                                   (dir / "bin/no-such-server").string() + "\" cannot be run"));
  EXPECT_THAT(agent.err, HasSubstr("engine llama-server@b1 is not offered"));
  EXPECT_THAT(agent.err, HasSubstr("no engine of " + config.string() + " is left to offer"));
}

// `orch agent --verify-models` reads every model file again: a sound file is ok, one
// whose .sha256 sidecar records other bytes is a MISMATCH naming both hashes (exit 1);
// the agent itself does not start.
TEST(AgentCommandTest, VerifyModelsReadsEveryFileAndNamesAMismatch) {
  ScratchFolder scratch("orch-agent-lock");
  const fs::path& dir = scratch.path;
  fs::create_directories(dir / "models");
  std::ofstream(dir / "models/a.gguf") << "GGUF model bytes";
  fs::path config = dir / "agent.toml";
  std::ofstream(config) << "[agent]\nid = \"verify-1\"\ncoordinator = \"tcp://127.0.0.1:9\"\n"
                        << "spool_dir = \"" << (dir / "spool").string() << "\"\n"
                        << "model_dirs = [\"" << (dir / "models").string() << "\"]\n"
                        << "model_cache = \"" << (dir / "cache").string() << "\"\n\n"
                        << "[[drivers]]\nname = \"test\"\nexecutable = \"" << TestDriverBinary()
                        << "\"\nengine = \"test-engine@1\"\n";
  ProcessResult sound =
      RunProcess({OrchBinary(), "agent", "--config", config.string(), "--verify-models"});
  EXPECT_EQ(sound.exit_code, 0) << sound.out << sound.err;
  EXPECT_THAT(sound.out, HasSubstr("ok "));
  EXPECT_THAT(sound.out, HasSubstr((dir / "models/a.gguf").string()));
  EXPECT_THAT(sound.out, HasSubstr(", 0 with a problem"));
  EXPECT_FALSE(fs::exists(dir / "spool/agent.lock"));  // no agent started

  const std::string other(64, 'a');
  std::ofstream(dir / "models/a.gguf.sha256") << other << "\n";
  ProcessResult bad =
      RunProcess({OrchBinary(), "agent", "--config", config.string(), "--verify-models"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_THAT(bad.out, HasSubstr("MISMATCH " + (dir / "models/a.gguf").string()));
  EXPECT_THAT(bad.out, HasSubstr("sidecar records " + other));
  EXPECT_THAT(bad.out, HasSubstr(", 1 with a problem"));
}

}  // namespace
}  // namespace orch::testing
