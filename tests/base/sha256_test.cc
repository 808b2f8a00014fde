#include "base/sha256.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256Test, MatchesKnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, IncrementalEqualsOneShot) {
  Sha256 hasher;
  hasher.Update("ab");
  hasher.Update("c");
  EXPECT_EQ(ToHex(hasher.Finish()), Sha256Hex("abc"));
}

TEST(Sha256Test, RecognisesHexDigests) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_TRUE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace orch
