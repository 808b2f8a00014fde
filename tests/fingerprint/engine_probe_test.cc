#include "fingerprint/engine_probe.h"

#include <gtest/gtest.h>

#include "base/sha256.h"
#include "fingerprint/map_commit_resolver.h"
#include "fingerprint/memory_hash_cache.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::TempDir;
using testing::WriteText;

class EngineProbeTest : public ::testing::Test {
 protected:
  TempDir dir_;
  MemoryHashCache cache_;
  FileHasher hasher_{cache_};
  MapCommitResolver resolver_;
  EngineProbe probe_{hasher_, resolver_};
};

TEST_F(EngineProbeTest, HashesTheExecutableAndCopiesMetadata) {
  WriteText(dir_ / "orch-driver-llamacpp", "driver binary");
  EngineFacts facts = probe_.Probe({.name = "llamacpp",
                                    .executable = dir_ / "orch-driver-llamacpp",
                                    .metadata = {{"version", "b4500"}}});
  EXPECT_EQ(facts.name, "llamacpp");
  EXPECT_EQ(facts.executable_sha256.value(), Sha256Hex("driver binary"));
  EXPECT_EQ(facts.metadata.at("version"), "b4500");
  EXPECT_FALSE(facts.backend_libraries.known());
  EXPECT_TRUE(facts.checkouts.empty());
}

TEST_F(EngineProbeTest, HashesOnlyTheBackendLibrariesInTheDirectory) {
  WriteText(dir_ / "lib/libggml-cpu-sapphirerapids.so", "spr kernels");
  WriteText(dir_ / "lib/libggml-cpu-haswell.so", "haswell kernels");
  WriteText(dir_ / "lib/libllama.so.1", "llama");
  WriteText(dir_ / "lib/README.md", "not a library");
  EngineFacts facts = probe_.Probe({.name = "llamacpp", .backend_dir = dir_ / "lib"});
  ASSERT_TRUE(facts.backend_libraries.known()) << facts.backend_libraries.reason();
  const LibraryHashes& libraries = facts.backend_libraries.value();
  ASSERT_EQ(libraries.size(), 3u);
  EXPECT_EQ(libraries.at("libggml-cpu-haswell.so").value(), Sha256Hex("haswell kernels"));
  EXPECT_EQ(libraries.count("README.md"), 0u);
}

TEST_F(EngineProbeTest, MissingPiecesAreUnknownNotFatal) {
  EngineFacts facts = probe_.Probe({.name = "vllm",
                                    .executable = dir_ / "missing",
                                    .backend_dir = dir_ / "no-such-dir",
                                    .checkouts = {"/src/not-a-repo"}});
  EXPECT_FALSE(facts.executable_sha256.known());
  EXPECT_FALSE(facts.backend_libraries.known());
  ASSERT_EQ(facts.checkouts.size(), 1u);
  EXPECT_EQ(facts.checkouts[0].state.reason(), "not a git repository: /src/not-a-repo");
}

TEST_F(EngineProbeTest, ReportsEachCheckoutState) {
  CheckoutState state{std::string(40, 'c'), "master", false, "b4500", true};
  resolver_.Set("/src/llama.cpp", state);
  EngineFacts facts = probe_.Probe({.name = "llamacpp", .checkouts = {"/src/llama.cpp"}});
  EXPECT_EQ(facts.executable_sha256.reason(), "no executable configured");
  ASSERT_EQ(facts.checkouts.size(), 1u);
  EXPECT_EQ(facts.checkouts[0].path, "/src/llama.cpp");
  EXPECT_EQ(facts.checkouts[0].state.value(), state);
}

TEST(BackendLibraryNameTest, RecognisesSharedLibraryNames) {
  EXPECT_TRUE(IsBackendLibraryName("libggml-cuda.so"));
  EXPECT_TRUE(IsBackendLibraryName("libggml-base.so.0.0.1"));
  EXPECT_TRUE(IsBackendLibraryName("libggml-metal.dylib"));
  EXPECT_FALSE(IsBackendLibraryName("llama-cli"));
  EXPECT_FALSE(IsBackendLibraryName("ggml.so"));
  EXPECT_FALSE(IsBackendLibraryName("libsomething.solid"));
}

}  // namespace
}  // namespace orch::fingerprint
