// One contract for every HashCache: the in-memory cache and the file-backed one.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "fingerprint/file_hash_cache.h"
#include "fingerprint/memory_hash_cache.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

const std::string kHashA(64, 'a');
const std::string kHashB(64, 'b');

FileIdentity Identity(std::int64_t mtime_ns) {
  return FileIdentity{"/models/qwen3-4b-q4_k_m.gguf", 2497280256, mtime_ns, 131, 2049};
}

// A cache under test, by name: a bare factory prints as its bytes, and
// ctest's test names would differ in every build.
struct CacheFactory {
  std::string name;
  std::function<std::unique_ptr<HashCache>(const std::string& dir)> make;
  friend void PrintTo(const CacheFactory& f, std::ostream* out) { *out << f.name; }
};

class HashCacheContractTest : public ::testing::TestWithParam<CacheFactory> {
 protected:
  TempDir dir_;
  std::unique_ptr<HashCache> cache_ = GetParam().make(dir_.path());
};

TEST_P(HashCacheContractTest, FindsWhatWasPutForTheSameIdentity) {
  EXPECT_FALSE(cache_->Find(Identity(1)).has_value());
  ASSERT_TRUE(cache_->Put(Identity(1), kHashA).ok());
  EXPECT_EQ(cache_->Find(Identity(1)), kHashA);
}

TEST_P(HashCacheContractTest, AnyIdentityChangeMisses) {
  ASSERT_TRUE(cache_->Put(Identity(1), kHashA).ok());
  EXPECT_FALSE(cache_->Find(Identity(2)).has_value());
  FileIdentity moved = Identity(1);
  moved.inode += 1;
  EXPECT_FALSE(cache_->Find(moved).has_value());
  FileIdentity rewritten = Identity(1);  // same size and mtime, written since
  rewritten.ctime_ns += 1;
  EXPECT_FALSE(cache_->Find(rewritten).has_value());
}

TEST_P(HashCacheContractTest, LaterPutReplacesEarlier) {
  ASSERT_TRUE(cache_->Put(Identity(1), kHashA).ok());
  ASSERT_TRUE(cache_->Put(Identity(1), kHashB).ok());
  EXPECT_EQ(cache_->Find(Identity(1)), kHashB);
}

INSTANTIATE_TEST_SUITE_P(Memory, HashCacheContractTest,
                         ::testing::Values(CacheFactory{"Twin", [](const std::string&) {
                                                          return std::unique_ptr<HashCache>(
                                                              new MemoryHashCache);
                                                        }}));
INSTANTIATE_TEST_SUITE_P(File, HashCacheContractTest,
                         ::testing::Values(CacheFactory{
                             "Real", [](const std::string& dir) {
                               return std::move(OpenFileHashCache(dir + "/hashes.tsv")).value();
                             }}));

TEST(FileHashCacheTest, EntriesSurviveReopening) {
  TempDir dir;
  std::string path = dir / "hashes.tsv";
  ASSERT_TRUE((*OpenFileHashCache(path))->Put(Identity(7), kHashA).ok());
  Result<std::unique_ptr<HashCache>> reopened = OpenFileHashCache(path);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Find(Identity(7)), kHashA);
}

TEST(FileHashCacheTest, CtimeSurvivesReopeningAndOlderLinesMatchNoRealFile) {
  TempDir dir;
  std::string path = dir / "hashes.tsv";
  FileIdentity identity = Identity(7);
  identity.ctime_ns = 1'700'000'000'123'456'789;
  ASSERT_TRUE((*OpenFileHashCache(path))->Put(identity, kHashA).ok());
  WriteText(path, ReadText(path) + kHashB + "\t1\t2\t3\t4\t/old.gguf\n");  // without ctime
  auto reopened = std::move(OpenFileHashCache(path)).value();
  EXPECT_EQ(reopened->Find(identity), kHashA);
  FileIdentity old{"/old.gguf", 1, 2, 3, 4};
  old.ctime_ns = 5;  // any real file has a ctime
  EXPECT_FALSE(reopened->Find(old).has_value());
}

TEST(FileHashCacheTest, MalformedLinesAreSkipped) {
  TempDir dir;
  std::string path = dir / "hashes.tsv";
  WriteText(path, "garbage\n" + kHashA + "\t1\t2\t3\t4\t/m.gguf\n" + kHashB + "\t1\tx");
  Result<std::unique_ptr<HashCache>> cache = OpenFileHashCache(path);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->Find(FileIdentity{"/m.gguf", 1, 2, 3, 4}), kHashA);
}

TEST(FileHashCacheTest, PathsWithNewlinesAreNotStored) {
  TempDir dir;
  std::string path = dir / "hashes.tsv";
  auto cache = std::move(OpenFileHashCache(path)).value();
  FileIdentity odd{"/models/a\nb.gguf", 1, 2, 3, 4};
  EXPECT_FALSE(cache->Put(odd, kHashA).ok());
  EXPECT_FALSE(cache->Find(odd).has_value());
}

TEST(FileHashCacheTest, UnreadableCacheFileIsAnError) {
  TempDir dir;
  testing::WriteText(dir / "cache/placeholder", "");
  Result<std::unique_ptr<HashCache>> cache = OpenFileHashCache(dir / "cache");
  EXPECT_FALSE(cache.ok());
}

}  // namespace
}  // namespace orch::fingerprint
