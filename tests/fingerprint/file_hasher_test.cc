#include "fingerprint/file_hasher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "fingerprint/memory_hash_cache.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::TempDir;
using testing::WriteText;

// Rewrites the file in place with same-size content and restores its mtime: size,
// mtime, inode and device stay; only ctime (which no program can set back) moves.
// ctime has the file system's clock granularity, so this waits (bounded) for it to move.
void RewriteKeepingSizeAndMtime(const std::string& path, const std::string& text) {
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  struct stat after = before;
  for (int tries = 0; tries < 200 && after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
                      after.st_ctim.tv_nsec == before.st_ctim.tv_nsec;
       ++tries) {
    if (tries > 0) ::usleep(1000);
    WriteText(path, text);
    timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    ASSERT_EQ(::stat(path.c_str(), &after), 0);
  }
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_EQ(after.st_ino, before.st_ino);
  ASSERT_FALSE(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
               after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
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
  for (int i = 0; i < 4; ++i) EXPECT_EQ(hasher.Hash(path)->sha256, Sha256Hex("GGUF weights"));
  EXPECT_EQ(hasher.files_read(), 1u);
  FileHasher restarted(cache);  // another process on the same cache
  EXPECT_EQ(restarted.Hash(path)->sha256, Sha256Hex("GGUF weights"));
  EXPECT_EQ(restarted.files_read(), 0u);
}

TEST(FileHasherTest, ContentChangedWithSizeAndMtimeRestoredIsHashedAgain) {
  TempDir dir;
  std::string path = dir / "model.gguf";
  WriteText(path, "GGUF weights");
  MemoryHashCache cache;
  FileHasher hasher(cache);
  ASSERT_TRUE(hasher.Hash(path).ok());
  ASSERT_NO_FATAL_FAILURE(RewriteKeepingSizeAndMtime(path, "GGUF WEIGHTS"));
  EXPECT_EQ(hasher.Hash(path)->sha256, Sha256Hex("GGUF WEIGHTS"));  // its ctime moved
  EXPECT_EQ(hasher.files_read(), 2u);
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
