// `orch keygen` as a user runs it: the real binary writing real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "protocol/identity_key.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(KeygenCommandTest, WritesAKeyPairOnlyItsOwnerCanReadAndRefusesToOverwriteIt) {
  fs::path dir = fs::temp_directory_path() / ("orch-keygen-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ProcessResult made =
      RunProcess({OrchBinary(), "keygen", "alice", "--role", "submitter", "--dir", dir.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr("alice submitter curve:"));
  struct stat info {};
  ASSERT_EQ(::stat((dir / "alice.key_secret").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  Result<protocol::SecretIdentity> key =
      protocol::ReadSecretKeyFile((dir / "alice.key_secret").string());
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->identity.role, "submitter");
  EXPECT_THAT(made.out, HasSubstr(key->identity.curve_public));

  ProcessResult again = RunProcess({OrchBinary(), "keygen", "alice", "--dir", dir.string()});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("exists; keep it, or pass --force"));
  EXPECT_EQ(protocol::ReadSecretKeyFile((dir / "alice.key_secret").string())->curve_secret,
            key->curve_secret);
  ProcessResult role =
      RunProcess({OrchBinary(), "keygen", "bob", "--role", "root", "--dir", dir.string()});
  EXPECT_EQ(role.exit_code, 2);
  EXPECT_THAT(role.err, HasSubstr("unknown role \"root\""));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
