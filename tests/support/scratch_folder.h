// A fresh folder for a test, removed when the test ends (also after a failed
// assertion), and the text of a file in it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace orch::testing {

struct ScratchFolder {
  // TMPDIR/PREFIX-PID, emptied first.
  explicit ScratchFolder(const std::string& prefix)
      : path(std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchFolder() { std::filesystem::remove_all(path); }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  std::filesystem::path path;
};

// The whole text of `path` ("" when it cannot be read).
inline std::string Slurp(const std::filesystem::path& path) {
  std::ostringstream out;
  out << std::ifstream(path).rdbuf();
  return out.str();
}

}  // namespace orch::testing
