// HostFingerprinter: a refresh re-reads only the driver files that changed.
#include "agent/host_fingerprinter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/sha256.h"
#include "fingerprint/map_commit_resolver.h"
#include "fingerprint/memory_hash_cache.h"
#include "fingerprint/scripted_command_runner.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A MemoryHashCache that counts the lookups it could not answer: each one is a
// file FileHasher then reads in full.
class CountingHashCache final : public fingerprint::HashCache {
 public:
  std::optional<std::string> Find(const fingerprint::FileIdentity& identity) const override {
    std::optional<std::string> found = inner_.Find(identity);
    if (!found) ++reads_;
    return found;
  }
  Status Put(const fingerprint::FileIdentity& identity, const std::string& sha256) override {
    return inner_.Put(identity, sha256);
  }
  int TakeReads() { return std::exchange(reads_, 0); }

 private:
  fingerprint::MemoryHashCache inner_;
  mutable int reads_ = 0;
};

class HostFingerprinterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("orch-host-fingerprinter-test-" + std::to_string(::getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/root");
    Write("driver-a", "driver a, release 1");
    Write("driver-b", "driver b");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
  }

  std::string dir_;
  fingerprint::ScriptedCommandRunner runner_;  // no GPU tools
  fingerprint::MapCommitResolver resolver_;
  CountingHashCache cache_;
};

TEST_F(HostFingerprinterTest, ARefreshReadsOnlyTheDriverFilesThatChanged) {
  fingerprint::RootFs root(dir_ + "/root");
  HostFingerprinter fingerprinter(
      root, runner_, resolver_, cache_,
      {{"a", dir_ + "/driver-a", "engine-a@1"}, {"b", dir_ + "/driver-b", "engine-b@1"}});
  std::string first = fingerprinter.Json();
  EXPECT_EQ(cache_.TakeReads(), 2) << "each driver read once";
  EXPECT_THAT(first, HasSubstr(Sha256Hex("driver a, release 1")));

  EXPECT_EQ(fingerprinter.Json(), first);
  EXPECT_EQ(cache_.TakeReads(), 0) << "nothing changed: nothing re-read";

  Write("driver-a", "driver a, release 2 (upgraded)");
  std::string upgraded = fingerprinter.Json();
  EXPECT_EQ(cache_.TakeReads(), 1) << "only the upgraded driver is read again";
  EXPECT_THAT(upgraded, HasSubstr(Sha256Hex("driver a, release 2 (upgraded)")));
  EXPECT_THAT(upgraded, Not(HasSubstr(Sha256Hex("driver a, release 1"))));
  EXPECT_THAT(upgraded, HasSubstr(Sha256Hex("driver b")));
}

}  // namespace
}  // namespace orch::agent
