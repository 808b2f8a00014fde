// Helpers for fingerprint tests: the testdata folder, temporary directories, file writes.
#pragma once

#include <string>

namespace orch::fingerprint::testing {

// Absolute path of tests/fingerprint/testdata/<relative>.
std::string TestData(const std::string& relative);

std::string ReadText(const std::string& path);
void WriteText(const std::string& path, const std::string& text);  // creates parents

// A fresh directory removed (recursively) on destruction.
class TempDir final {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

// Copies testdata/<fixture> into `to`, keeping permissions.
void CopyFixture(const std::string& fixture, const std::string& to);

}  // namespace orch::fingerprint::testing
