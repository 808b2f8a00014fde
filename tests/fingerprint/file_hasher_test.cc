#include "fingerprint/file_hasher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/sha256.h"
#include "fingerprint/memory_hash_cache.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::TempDir;
using testing::WriteText;

// Rewrites the file with same-size content and restores its mtime, so only a hash of the
// bytes (not the identity) could notice. The inode stays the same (in-place write).
void RewriteKeepingIdentity(const std::string& path, const std::string& text) {
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  WriteText(path, text);
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(FileHasherTest, HashesFileContents) {
  TempDir dir;
  WriteText(dir / "model.gguf", "GGUF weights");
  MemoryHashCache cache;
  Result<FileHash> hash = FileHasher(cache).Hash(dir / "model.gguf");
  ASSERT_TRUE(hash.ok()) << hash.status().ToString();
  EXPECT_EQ(hash->sha256, Sha256Hex("GGUF weights"));
  EXPECT_EQ(hash->size, 12u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(FileHasherTest, UnchangedFileIsHashedOnce) {
  TempDir dir;
  std::string path = dir / "model.gguf";
  WriteText(path, "GGUF weights");
  MemoryHashCache cache;
  FileHasher hasher(cache);
  ASSERT_TRUE(hasher.Hash(path).ok());
  RewriteKeepingIdentity(path, "GGUF WEIGHTS");
  EXPECT_EQ(hasher.Hash(path)->sha256, Sha256Hex("GGUF weights"));  // from the cache
}

TEST(FileHasherTest, TouchedFileIsHashedAgain) {
  TempDir dir;
  std::string path = dir / "model.gguf";
  WriteText(path, "GGUF weights");
  MemoryHashCache cache;
  FileHasher hasher(cache);
  ASSERT_TRUE(hasher.Hash(path).ok());
  WriteText(path, "GGUF WEIGHTS");
  timespec times[2] = {{0, UTIME_NOW}, {12345, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(hasher.Hash(path)->sha256, Sha256Hex("GGUF WEIGHTS"));
}

TEST(FileHasherTest, MissingFileIsNotFoundAndDirectoryIsAnError) {
  TempDir dir;
  MemoryHashCache cache;
  FileHasher hasher(cache);
  EXPECT_EQ(hasher.Hash(dir / "absent.gguf").status().code(), StatusCode::kNotFound);
  Result<FileHash> directory = hasher.Hash(dir.path());
  EXPECT_EQ(directory.status().code(), StatusCode::kIoError);
  EXPECT_NE(directory.status().message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace orch::fingerprint
