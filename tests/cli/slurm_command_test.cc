// `orch slurm submit` refuses a pilot config it cannot use before it asks Slurm anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(SlurmCommandTest, APilotConfigWhoseKeyIsNotAPilotKeyIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("orch-slurm-cli-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (auto [name, role] : {std::pair{"box", "agent"}, std::pair{"coordinator", "coordinator"}}) {
    ASSERT_EQ(
        RunProcess({OrchBinary(), "keygen", name, "--role", role, "--dir", (dir / "keys").string()})
            .exit_code,
        0);
  }
  std::ofstream(dir / "pilot.toml")
      << "[agent]\nid = \"box\"\ncoordinator = \"tcp://127.0.0.1:7700\"\nkey = \""
      << (dir / "keys" / "box.key_secret").string() << "\"\ncoordinator_key = \""
      << (dir / "keys" / "coordinator.key").string()
      << "\"\n\n[[drivers]]\nname = \"t\"\nexecutable = \"/bin/true\"\nengine = \"e@1\"\n";
  ProcessResult submit = RunProcess(
      {OrchBinary(), "slurm", "submit", "--agent-config", (dir / "pilot.toml").string()});
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_THAT(submit.err, HasSubstr("has role agent; pilots need a key of role pilot"));
  EXPECT_THAT(submit.err, HasSubstr("orch keygen NAME --role pilot"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
