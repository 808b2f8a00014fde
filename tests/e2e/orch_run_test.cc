// `orch run` end to end: the command starts its own coordinator and agents as child
// processes, runs a plan with the test driver, stops them, and `orch report` reads the
// result from the store they left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(OrchRunTest, RunsAPlanOnThisMachineAndReportsIt) {
  fs::path dir = fs::temp_directory_path() / ("orch-run-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-run", 6, 12, 0);
  std::string data = (dir / "data").string();

  ProcessResult run = RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--agents",
                                  "2", "--data-dir", data, "--timeout", "120", "--driver",
                                  "test-engine@1=" + TestDriverBinary()},
                                 std::chrono::seconds(150));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("[6/6] succeeded 6, running 0, pending 0, failed 0"));

  ProcessResult report = RunProcess({OrchBinary(), "report", "e2e-run", "--data-dir", data,
                                     "--html", (dir / "report.html").string()});
  ASSERT_EQ(report.exit_code, 0) << report.out << report.err;
  // The baseline repeats ran one exact coordinate: bit-identical, like a real engine.
  EXPECT_THAT(report.out, HasSubstr("bit-identical"));
  EXPECT_THAT(report.out, HasSubstr("knob.variant=4"));
  std::ifstream html(dir / "report.html");
  std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_THAT(page, HasSubstr("<svg"));

  // The agents' host fingerprint is stored once; `fingerprint diff` finds it by id.
  std::string id;
  {
    Result<std::unique_ptr<store::Store>> db =
        store::OpenRocksDbStore(store::RocksDbPathInDataDir(data), store::RocksDbOptions{});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<store::StoreState> state = (*db)->LoadState();
    ASSERT_TRUE(state.ok() && !state->runs.empty());
    id = state->runs.front().host_fingerprint_id;
  }
  ProcessResult same = RunProcess({OrchBinary(), "fingerprint", "diff", id, id, "--data-dir", data});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_THAT(same.out, HasSubstr("identical"));
  ProcessResult unknown =
      RunProcess({OrchBinary(), "fingerprint", "diff", id, "fp-nope", "--data-dir", data});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("fp-nope is neither a file nor a fingerprint stored in"));

  ProcessResult missing_driver =
      RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--data-dir", data});
  EXPECT_EQ(missing_driver.exit_code, 2);
  EXPECT_THAT(missing_driver.err, HasSubstr("no driver for engine test-engine@1: pass --driver "
                                            "test-engine@1=EXECUTABLE"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, ALlamaCppEngineWithoutADriverNamesWhereItLookedAndTheFlag) {
  fs::path dir = fs::temp_directory_path() / ("orch-run-nodriver-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string spec = TestEngineSpec("e2e-no-driver", 3, 4, 0);
  spec.replace(spec.find("test-engine@1"), 13, "llama.cpp@no-such-release");
  std::ofstream(dir / "spec.toml") << spec;
  ProcessResult run = RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--data-dir",
                                  (dir / "data").string()});
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  std::string exe_dir = fs::path(OrchBinary()).parent_path().string();
  EXPECT_THAT(run.err, HasSubstr("no driver for engine llama.cpp@no-such-release: looked for " +
                                 exe_dir + "/orch-driver-llamacpp-no-such-release and "));
  EXPECT_THAT(run.err, HasSubstr("/drivers/llamacpp/orch-driver-llamacpp-no-such-release"));
  EXPECT_THAT(run.err, HasSubstr("pass --driver llama.cpp@no-such-release=EXECUTABLE"));
  EXPECT_FALSE(fs::exists(dir / "data")) << "nothing is started without every driver";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
