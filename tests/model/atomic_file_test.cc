#include "model/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace orch::model {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-atomic-file-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::size_t Entries() {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, CommitReplacesTheFileAndReturnsItsDigest) {
  std::string path = (dir_ / "out").string();
  std::ofstream(path) << "old";
  Result<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE((*file)->Append("ab").ok());
  ASSERT_TRUE((*file)->Append("c").ok());
  EXPECT_EQ(Read(path), "old");  // nothing visible before the commit
  Result<FileDigest> digest = (*file)->Commit();
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(Read(path), "abc");
  EXPECT_EQ(digest->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest->bytes, 3u);
  EXPECT_EQ(Entries(), 1u);  // no temporary file left
}

TEST_F(AtomicFileTest, AbandonedWriteLeavesTheOldFileAndNoTemporary) {
  std::string path = (dir_ / "out").string();
  std::ofstream(path) << "old";
  {
    Result<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append(std::string(3 << 20, 'x')).ok());  // flushed to disk
  }
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(Entries(), 1u);
}

TEST_F(AtomicFileTest, MissingFolderIsAnIoErrorNamingTheFile) {
  std::string path = (dir_ / "no-such-dir" / "out").string();
  Result<FileDigest> written = WriteFileAtomically(path, "x");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kIoError);
  EXPECT_NE(written.status().message().find(path + ".tmp."), std::string::npos)
      << written.status().message();
}

}  // namespace
}  // namespace orch::model
