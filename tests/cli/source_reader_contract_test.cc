// One contract for both SourceReader implementations: the CLI's file reader and the
// in-memory twin used by planner tests. The rules are planner/source_reader.h's: by
// default only regular files inside the spec's directory, at most kMaxSourceFileBytes;
// kAnywhere lifts the directory rule only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>

#include "cli/files.h"
#include "tests/support/map_source_reader.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using planner::kMaxSourceFileBytes;
using planner::SourceScope;
using ::testing::HasSubstr;

// The world both readers see. On disk, under a fresh `root`:
//   root/outside.txt               "secret\n"  (outside the spec's directory)
//   root/spec/                     the spec's directory, holding
//     prompts/a.txt                "alpha\n"
//     prompts/deep/b.txt           "beta\n"
//     inside-link -> prompts/a.txt
//     prompts-link -> prompts      (a folder symlink that stays inside)
//     passwd-link -> /etc/passwd
//     etc-link -> /etc
//     escape-link -> ../outside.txt
//     outside-link -> ROOT/outside.txt (absolute)
//     loop -> loop
//     pipe                         a FIFO
//     big.txt                      kMaxSourceFileBytes + 1 bytes (sparse)
struct World {
  fs::path spec_dir;
  fs::path outside;  // absolute path of root/outside.txt
};

struct ReaderFactory {
  const char* name;
  std::function<std::unique_ptr<planner::SourceReader>(const World&, SourceScope)> make;
};
void PrintTo(const ReaderFactory& factory, std::ostream* os) { *os << factory.name; }

std::unique_ptr<planner::SourceReader> RealReader(const World& world, SourceScope scope) {
  return std::make_unique<cli::FileSourceReader>(world.spec_dir.string(), scope);
}

std::unique_ptr<planner::SourceReader> TwinReader(const World& world, SourceScope scope) {
  auto reader = std::make_unique<testing::MapSourceReader>(scope);
  reader->Add(world.outside.string(), "secret\n");
  reader->Add("../outside.txt", "secret\n");
  reader->AddDirectory("prompts");
  reader->Add("prompts/a.txt", "alpha\n");
  reader->AddDirectory("prompts/deep");
  reader->Add("prompts/deep/b.txt", "beta\n");
  reader->AddSymlink("inside-link", "prompts/a.txt");
  reader->AddSymlink("prompts-link", "prompts");
  reader->AddSymlink("passwd-link", "/etc/passwd");
  reader->Add("/etc/passwd", "root:x:0:0::/root:/bin/sh\n");
  reader->AddSymlink("etc-link", "/etc");
  reader->AddSymlink("escape-link", "../outside.txt");
  reader->AddSymlink("outside-link", world.outside.string());
  reader->AddSymlink("loop", "loop");
  reader->AddFifo("pipe");
  reader->AddSparse("big.txt", kMaxSourceFileBytes + 1);
  return reader;
}

class SourceReaderContractTest : public ::testing::TestWithParam<ReaderFactory> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("orch-reader-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    world_ = {root_ / "spec", root_ / "outside.txt"};
    const fs::path& dir = world_.spec_dir;
    fs::create_directories(dir / "prompts/deep");
    std::ofstream(world_.outside) << "secret\n";
    std::ofstream(dir / "prompts/a.txt") << "alpha\n";
    std::ofstream(dir / "prompts/deep/b.txt") << "beta\n";
    fs::create_symlink("prompts/a.txt", dir / "inside-link");
    fs::create_directory_symlink("prompts", dir / "prompts-link");
    fs::create_symlink("/etc/passwd", dir / "passwd-link");
    fs::create_directory_symlink("/etc", dir / "etc-link");
    fs::create_symlink("../outside.txt", dir / "escape-link");
    fs::create_symlink(world_.outside, dir / "outside-link");
    fs::create_symlink("loop", dir / "loop");
    ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
    std::ofstream(dir / "big.txt").close();
    fs::resize_file(dir / "big.txt", kMaxSourceFileBytes + 1);  // sparse: no blocks written
    reader_ = GetParam().make(world_, SourceScope::kSpecDirOnly);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<planner::SourceReader> Permissive() {
    return GetParam().make(world_, SourceScope::kAnywhere);
  }
  // Asserts that `path` is refused for leaving the spec's directory, saying what to do.
  void ExpectOutside(const std::string& path, const std::string& why) {
    Result<std::string> r = reader_->Read(path);
    ASSERT_FALSE(r.ok()) << path << " was read: " << *r;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("\"" + path + "\" " + why));
    EXPECT_THAT(r.status().message(), HasSubstr("move the file there"));
    EXPECT_THAT(r.status().message(), HasSubstr("--allow-outside-spec-dir"));
  }

  fs::path root_;
  World world_;
  std::unique_ptr<planner::SourceReader> reader_;
};

TEST_P(SourceReaderContractTest, ReadsARelativePathExactly) {
  Result<std::string> r = reader_->Read("prompts/a.txt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "alpha\n");
}

TEST_P(SourceReaderContractTest, ReadsAFileInANestedFolder) {
  Result<std::string> r = reader_->Read("prompts/deep/b.txt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "beta\n");
}

TEST_P(SourceReaderContractTest, ReadsThroughDotDotThatStaysInside) {
  Result<std::string> r = reader_->Read("prompts/deep/../a.txt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "alpha\n");
}

TEST_P(SourceReaderContractTest, FollowsSymlinksThatStayInside) {
  Result<std::string> file = reader_->Read("inside-link");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(*file, "alpha\n");
  Result<std::string> folder = reader_->Read("prompts-link/deep/b.txt");
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ(*folder, "beta\n");
}

TEST_P(SourceReaderContractTest, MissingFileIsAnErrorNamingThePath) {
  Result<std::string> r = reader_->Read("prompts/missing.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("prompts/missing.txt"));
  EXPECT_THAT(r.status().message(), HasSubstr("No such file or directory"));
}

TEST_P(SourceReaderContractTest, RefusesAnAbsolutePath) {
  ExpectOutside("/etc/passwd", "is an absolute path");
  ExpectOutside(world_.outside.string(), "is an absolute path");
}

TEST_P(SourceReaderContractTest, RefusesADotDotEscape) {
  ExpectOutside("../outside.txt", "climbs out of the spec's directory through \"..\"");
  ExpectOutside("prompts/../../outside.txt", "climbs out of the spec's directory");
}

TEST_P(SourceReaderContractTest, RefusesASymlinkWhoseTargetLeavesTheDirectory) {
  ExpectOutside("passwd-link", "resolves to /etc/passwd, outside the spec's directory");
  ExpectOutside("escape-link", "resolves to ");
  ExpectOutside("outside-link", "resolves to ");
}

TEST_P(SourceReaderContractTest, RefusesAFolderSymlinkThatLeavesTheDirectory) {
  ExpectOutside("etc-link/passwd", "resolves to /etc/passwd, outside the spec's directory");
}

TEST_P(SourceReaderContractTest, RefusesASymlinkLoop) {
  Result<std::string> r = reader_->Read("loop");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("Too many levels of symbolic links"));
}

TEST_P(SourceReaderContractTest, RefusesAFifoWithoutOpeningIt) {
  Result<std::string> r = reader_->Read("pipe");  // an open would block: no writer
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("\"pipe\" is a FIFO, not a regular file"));
}

TEST_P(SourceReaderContractTest, RefusesADirectory) {
  Result<std::string> r = reader_->Read("prompts");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("\"prompts\" is a directory, not a regular file"));
}

TEST_P(SourceReaderContractTest, RefusesAFileOverTheSizeLimit) {
  Result<std::string> r = reader_->Read("big.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("\"big.txt\" is 67108865 bytes, over the limit of 64 MiB"));
}

TEST_P(SourceReaderContractTest, AnywhereScopeReadsOutsideTheSpecDirectory) {
  std::unique_ptr<planner::SourceReader> reader = Permissive();
  for (const std::string& path : {std::string("../outside.txt"), world_.outside.string(),
                                  std::string("escape-link"), std::string("outside-link")}) {
    Result<std::string> r = reader->Read(path);
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    EXPECT_EQ(*r, "secret\n") << path;
  }
}

TEST_P(SourceReaderContractTest, AnywhereScopeStillRefusesSpecialAndLargeFiles) {
  std::unique_ptr<planner::SourceReader> reader = Permissive();
  for (const char* path : {"pipe", "prompts", "big.txt"}) {
    Result<std::string> r = reader->Read(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Readers, SourceReaderContractTest,
                         ::testing::Values(ReaderFactory{"FileSourceReader", RealReader},
                                           ReaderFactory{"MapSourceReader", TwinReader}),
                         [](const ::testing::TestParamInfo<ReaderFactory>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace orch
