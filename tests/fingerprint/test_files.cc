#include "tests/fingerprint/test_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace orch::fingerprint::testing {

namespace fs = std::filesystem;

std::string TestData(const std::string& relative) {
  return std::string(ORCH_SOURCE_DIR) + "/tests/fingerprint/testdata/" + relative;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "orch-fp-XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp failed";
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  // Restore permissions a test may have removed so the tree can be deleted.
  for (auto it = fs::recursive_directory_iterator(path_, ignored);
       it != fs::recursive_directory_iterator(); it.increment(ignored)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
  }
  fs::remove_all(path_, ignored);
}

void CopyFixture(const std::string& fixture, const std::string& to) {
  fs::copy(TestData(fixture), to, fs::copy_options::recursive);
}

}  // namespace orch::fingerprint::testing
