// `orch bisect` refuses what it cannot bisect before anything starts: the real binary as a
// child process (the runs themselves: tests/e2e/bisect_example_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/subprocess.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::OrchBinary;
using testing::ProcessResult;
using testing::RunProcess;

TEST(BisectCommandTest, ASpecWithoutBisectIsRefusedAndNothingStarts) {
  const fs::path data =
      fs::temp_directory_path() / ("orch-bisect-cli-" + std::to_string(::getpid()));
  fs::remove_all(data);
  ProcessResult r = RunProcess(
      {OrchBinary(), "bisect", "examples/seed-replication.toml", "--data-dir", data.string()},
      std::chrono::seconds(30), ORCH_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("orch bisect: examples/seed-replication.toml has no [bisect] "
                               "section (docs/bisect.md); orch run runs a one-axis-at-a-time "
                               "spec"));
  EXPECT_FALSE(fs::exists(data)) << "no coordinator, no store";
}

TEST(BisectCommandTest, AnInvalidBisectionIsRefusedWithItsField) {
  const fs::path dir =
      fs::temp_directory_path() / ("orch-bisect-bad-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "spec.toml") << R"toml([experiment]
name = "bad"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "w"
kind = "teacher_forced"
text = "In the beginning"
positions = 4

[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu" }
to = { quant = "f32" }
)toml";
  ProcessResult r = RunProcess(
      {OrchBinary(), "bisect", (dir / "spec.toml").string(), "--data-dir", (dir / "data").string()},
      std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("error: bisect.to: bisect.to gives every axis the value "
                               "bisect.from gives it: there is no difference to explain"));
  EXPECT_FALSE(fs::exists(dir / "data"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch
