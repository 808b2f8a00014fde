#include "agent/model_inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/sha256.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class VerifyModelFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("orch-verify-models-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "models");
    fs::create_directories(root_ / "cache");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Write(const std::string& relative, const std::string& content) {
    fs::path path = root_ / relative;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }
  std::vector<ModelFileCheck> Verify() {
    return VerifyModelFiles({(root_ / "models").string()}, (root_ / "cache").string(), hashes_);
  }

  fs::path root_;
  fingerprint::MemoryHashCache hashes_;
};

TEST_F(VerifyModelFilesTest, ReadsEveryModelAndCachedFileAndFindsThemSound) {
  std::string model = Write("models/a.gguf", "weights a");
  std::string variant = Write("cache/0123-q8_0-b1.gguf", "variant");
  Write("cache/0123-q8_0-b1.gguf.sha256", Sha256Hex("variant") + "  0123-q8_0-b1.gguf\n");
  Write("cache/file-sha256-agent.tsv", "bookkeeping");
  std::vector<ModelFileCheck> checks = Verify();
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].path, model);
  EXPECT_EQ(checks[0].sha256, Sha256Hex("weights a"));
  EXPECT_EQ(checks[1].path, variant);
  EXPECT_EQ(checks[1].recorded, Sha256Hex("variant"));
  EXPECT_EQ(checks[0].problem + checks[1].problem, "");
  // The fresh hashes are kept: a job finds them without reading the files.
  fingerprint::FileHasher hasher(hashes_);
  EXPECT_EQ(hasher.Hash(variant)->sha256, Sha256Hex("variant"));
  EXPECT_EQ(hasher.files_read(), 0u);
}

TEST_F(VerifyModelFilesTest, ReadsFilesTheCacheTrustsAndReportsWhatDisagrees) {
  std::string model = Write("models/a.gguf", "weights a");
  std::string variant = Write("cache/0123-q8_0-b1.gguf", "variant, damaged");
  Write("cache/0123-q8_0-b1.gguf.sha256", Sha256Hex("variant") + "  0123-q8_0-b1.gguf\n");
  // A lying entry: the cache trusts another hash for the model's current identity.
  ASSERT_TRUE(hashes_.Put(fingerprint::CurrentIdentity(model).value(), Sha256Hex("b")).ok());
  std::vector<ModelFileCheck> checks = Verify();
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_THAT(checks[0].problem, HasSubstr("the hash cache trusted sha256 " + Sha256Hex("b") +
                                           ", its bytes have " + Sha256Hex("weights a")));
  EXPECT_THAT(checks[1].problem, HasSubstr("its .sha256 sidecar records " + Sha256Hex("variant") +
                                           ", its bytes have " + Sha256Hex("variant, damaged")));
  EXPECT_EQ(hashes_.Find(fingerprint::CurrentIdentity(model).value()), Sha256Hex("weights a"))
      << "the lying entry is replaced";
}

}  // namespace
}  // namespace orch::agent
