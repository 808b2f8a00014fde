#include "protocol/identity_key.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <zmq.hpp>

namespace orch::protocol {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class IdentityKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-keys-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SecretIdentity Written(const std::string& name, const std::string& role) {
    Result<SecretIdentity> key = GenerateIdentity(name, role);
    EXPECT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_TRUE(WriteIdentity(*key, dir_.string(), false).ok());
    return *key;
  }
  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

  fs::path dir_;
};

mode_t Mode(const std::string& path) {
  struct stat info {};
  ::stat(path.c_str(), &info);
  return info.st_mode & 0777;
}

TEST(Z85Test, EncodesTheRfc32TestVectorAndBack) {
  std::string bytes("\x86\x4F\xD2\x6F\xB5\x59\xF7\x5B", 8);
  EXPECT_EQ(Z85Encode(bytes), "HelloWorld");
  EXPECT_EQ(*Z85Decode("HelloWorld"), bytes);
  EXPECT_FALSE(Z85Decode("Hello!").ok());
}

TEST_F(IdentityKeyTest, WritesZcertFilesWithTheSecretOnlyForTheOwner) {
  SecretIdentity key = Written("agent-1", "agent");
  EXPECT_EQ(Mode(Path("agent-1.key_secret")), 0600u);
  EXPECT_EQ(Mode(Path("agent-1.key")), 0644u);
  std::ifstream pub(Path("agent-1.key"));
  std::string text((std::istreambuf_iterator<char>(pub)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("curve\n    public-key = \"" + key.identity.curve_public + "\""));
  EXPECT_THAT(text, HasSubstr("    name = \"agent-1\""));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("secret"))) << "the public file holds no secret";
}

TEST_F(IdentityKeyTest, ReadsBackWhatItWrote) {
  SecretIdentity key = Written("alice", "submitter");
  Result<PublicIdentity> pub = ReadPublicKeyFile(Path("alice.key"));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(*pub, key.identity);
  Result<SecretIdentity> secret = ReadSecretKeyFile(Path("alice.key_secret"));
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ(secret->curve_secret, key.curve_secret);
  EXPECT_EQ(secret->sign_secret, key.sign_secret);
  EXPECT_EQ(secret->identity, key.identity);
}

TEST_F(IdentityKeyTest, RefusesASecretFileOthersCanRead) {
  Written("bob", "admin");
  fs::permissions(Path("bob.key_secret"), fs::perms::others_read, fs::perm_options::add);
  Result<SecretIdentity> secret = ReadSecretKeyFile(Path("bob.key_secret"));
  EXPECT_EQ(secret.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(secret.status().message(), HasSubstr("chmod 600 " + Path("bob.key_secret")));
}

TEST_F(IdentityKeyTest, DoesNotOverwriteAKeyUnlessAsked) {
  SecretIdentity first = Written("carol", "viewer");
  Result<SecretIdentity> second = GenerateIdentity("carol", "viewer");
  Result<std::pair<std::string, std::string>> again = WriteIdentity(*second, dir_.string(), false);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadPublicKeyFile(Path("carol.key"))->curve_public, first.identity.curve_public);
  ASSERT_TRUE(WriteIdentity(*second, dir_.string(), true).ok());
  EXPECT_EQ(ReadPublicKeyFile(Path("carol.key"))->curve_public, second->identity.curve_public);
}

TEST_F(IdentityKeyTest, BadNamesRolesAndFilesAreErrorsNamingThem) {
  EXPECT_THAT(GenerateIdentity("../x", "agent").status().message(), HasSubstr("\"../x\""));
  EXPECT_THAT(GenerateIdentity("x", "root").status().message(), HasSubstr("unknown role \"root\""));
  fs::create_directories(dir_);
  std::ofstream(Path("broken.key")) << "metadata\n    name \"x\"\n";
  EXPECT_THAT(ReadPublicKeyFile(Path("broken.key")).status().message(),
              HasSubstr(Path("broken.key") + ":2: expected `key = \"value\"`"));
  std::ofstream(Path("short.key")) << "metadata\n    name = \"x\"\n    role = \"agent\"\n"
                                   << "    ed25519-public-key = \"abc\"\ncurve\n";
  EXPECT_THAT(ReadPublicKeyFile(Path("short.key")).status().message(),
              HasSubstr("metadata/ed25519-public-key: expected 40 Z85 characters"));
}

TEST_F(IdentityKeyTest, AllowedKeysAreEveryPublicFileAndDuplicatesAreRefused) {
  Written("agent-1", "agent");
  Written("alice", "submitter");
  Result<std::vector<PublicIdentity>> keys = ReadAllowedKeys(dir_.string());
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].name, "agent-1");
  EXPECT_EQ((*keys)[1].role, "submitter");
  fs::copy(Path("alice.key"), Path("alice-again.key"));
  EXPECT_THAT(ReadAllowedKeys(dir_.string()).status().message(),
              HasSubstr("a second key named \"alice\""));
}

// The CURVE half really is a CurveZMQ key pair: a handshake with it succeeds.
TEST_F(IdentityKeyTest, TheCurveKeysCompleteACurveZmqHandshake) {
  SecretIdentity server = *GenerateIdentity("coordinator", "coordinator");
  SecretIdentity client = *GenerateIdentity("agent-1", "agent");
  zmq::context_t context;
  zmq::socket_t rep(context, zmq::socket_type::rep);
  rep.set(zmq::sockopt::curve_server, true);
  rep.set(zmq::sockopt::curve_secretkey, server.curve_secret);
  rep.set(zmq::sockopt::linger, 0);
  rep.bind("tcp://127.0.0.1:*");
  zmq::socket_t req(context, zmq::socket_type::req);
  req.set(zmq::sockopt::curve_serverkey, server.identity.curve_public);
  req.set(zmq::sockopt::curve_publickey, client.identity.curve_public);
  req.set(zmq::sockopt::curve_secretkey, client.curve_secret);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 5000);
  rep.set(zmq::sockopt::rcvtimeo, 5000);
  req.connect(rep.get(zmq::sockopt::last_endpoint));
  ASSERT_TRUE(req.send(zmq::str_buffer("hello"), zmq::send_flags::none));
  zmq::message_t got;
  ASSERT_TRUE(rep.recv(got));
  EXPECT_EQ(got.to_string(), "hello");
}

}  // namespace
}  // namespace orch::protocol
