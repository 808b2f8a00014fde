// Key files as the coordinator loads them (cli/security_keys.h), on real files.
#include "cli/security_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SecurityKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "allowed");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes key NAME of ROLE into the folder; its secret key file.
  std::string Key(const std::string& name, const std::string& role) {
    protocol::SecretIdentity key = std::move(protocol::GenerateIdentity(name, role)).value();
    EXPECT_TRUE(protocol::WriteIdentity(key, dir_.string(), false).ok());
    return (dir_ / (name + ".key_secret")).string();
  }

  fs::path dir_ = fs::temp_directory_path() / ("orch-security-keys-" + std::to_string(getpid()));
};

// Regression: the coordinator served with an agent-role key as its own.
TEST_F(SecurityKeysTest, TheCoordinatorsKeyMustHaveTheCoordinatorRole) {
  std::string agent = Key("box", "agent");
  Result<ServerSecurity> refused = LoadServerSecurity(agent, (dir_ / "allowed").string());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("box.key_secret: key 'box' has role agent; a coordinator serves with a "
                        "key of role coordinator (orch keygen NAME --role coordinator)"));
  std::string own = Key("coordinator", "coordinator");
  Result<ServerSecurity> loaded = LoadServerSecurity(own, (dir_ / "allowed").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->policy.authenticated);
  EXPECT_EQ(loaded->bundles.own->identity.name, "coordinator");
}

}  // namespace
}  // namespace orch::cli
