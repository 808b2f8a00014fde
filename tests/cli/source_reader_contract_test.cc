// One contract for both SourceReader implementations: the CLI's file reader and the
// in-memory twin used by planner tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include "cli/files.h"
#include "tests/support/map_source_reader.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Builds a reader that holds "prompts/a.txt" = "alpha\n" and nothing else.
using ReaderFactory = std::function<std::unique_ptr<planner::SourceReader>(const fs::path&)>;

class SourceReaderContractTest : public ::testing::TestWithParam<ReaderFactory> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orch-reader-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "prompts");
    std::ofstream(dir_ / "prompts/a.txt") << "alpha\n";
    reader_ = GetParam()(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::unique_ptr<planner::SourceReader> reader_;
};

TEST_P(SourceReaderContractTest, ReadsARelativePathExactly) {
  Result<std::string> r = reader_->Read("prompts/a.txt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "alpha\n");
}

TEST_P(SourceReaderContractTest, MissingFileIsAnErrorNamingThePath) {
  Result<std::string> r = reader_->Read("prompts/missing.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("prompts/missing.txt"));
  EXPECT_THAT(r.status().message(), HasSubstr("No such file or directory"));
}

INSTANTIATE_TEST_SUITE_P(
    Readers, SourceReaderContractTest,
    ::testing::Values(
        [](const fs::path& dir) -> std::unique_ptr<planner::SourceReader> {
          return std::make_unique<cli::FileSourceReader>(dir.string());
        },
        [](const fs::path&) -> std::unique_ptr<planner::SourceReader> {
          auto reader = std::make_unique<testing::MapSourceReader>();
          reader->Add("prompts/a.txt", "alpha\n");
          return reader;
        }));

}  // namespace
}  // namespace orch
