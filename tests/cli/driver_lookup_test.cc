// Where orch looks for a driver when none is given (orch run, orch model quantize).
#include "cli/driver_lookup.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace orch::cli {
namespace {

TEST(DriverLookupTest, AnEngineOfLlamaCppNamesItsRelease) {
  EXPECT_EQ(LlamaCppRelease("llama.cpp@b8390"), "b8390");
  EXPECT_EQ(LlamaCppRelease("llama.cpp@v0.4.0"), "v0.4.0");
  EXPECT_EQ(LlamaCppRelease("llama.cpp@my-cuda_1"), "my-cuda_1");
}

TEST(DriverLookupTest, OtherEnginesAndReleasesThatAreNoPlainNameHaveNone) {
  for (const char* engine : {"vllm@0.9", "test-engine@1", "llama.cpp@", "llama.cpp@../x",
                             "llama.cpp@.hidden", "llama.cpp@a/b", "b8390", "llama.cpp"}) {
    EXPECT_EQ(LlamaCppRelease(engine), std::nullopt) << engine;
  }
}

TEST(DriverLookupTest, CandidatesAreNextToOrchThenInstalledThenInTheBuildTree) {
  EXPECT_EQ(
      DefaultDriverCandidates("/src/orch/build/cli", "v0.4.0"),
      (std::vector<std::string>{"/src/orch/build/cli/orch-driver-llamacpp-v0.4.0",
                                "/src/orch/build/lib/orch/drivers/orch-driver-llamacpp-v0.4.0",
                                "/src/orch/build/drivers/llamacpp/orch-driver-llamacpp-v0.4.0"}));
  EXPECT_EQ(DefaultDriverCandidates("/usr/bin", "b8390")[1],
            "/usr/lib/orch/drivers/orch-driver-llamacpp-b8390");
}

TEST(DriverLookupTest, AnErrorNamesEveryPlaceLooked) {
  EXPECT_EQ(JoinPlaces({"/a"}), "/a");
  EXPECT_EQ(JoinPlaces({"/a", "/b"}), "/a and /b");
  EXPECT_EQ(JoinPlaces({"/a", "/b", "/c"}), "/a, /b and /c");
}

TEST(DriverLookupTest, ExecutableDirIsTheFolderOfThisProgram) {
  std::filesystem::path dir = ExecutableDir();
  EXPECT_TRUE(dir.is_absolute()) << dir;
  EXPECT_TRUE(std::filesystem::is_directory(dir)) << dir;
}

}  // namespace
}  // namespace orch::cli
