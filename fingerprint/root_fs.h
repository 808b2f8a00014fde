// RootFs: read-only access to files below a root directory ("/" on a real host, a fixture
// tree in tests). Error messages name the path relative to the root ("/proc/cpuinfo:
// Permission denied"), never the root itself, so facts probed from two copies of the same
// tree are identical.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::fingerprint {

class RootFs final {
 public:
  // `root` is a directory; "" and "/" both mean the real root.
  explicit RootFs(std::string root);

  // The whole file at `path` (absolute, relative to the root), at most `max_bytes`.
  // Errors: NotFound when absent, IoError otherwise (permission, a directory, ...).
  Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes = 1 << 20) const;
  // ReadFile with trailing whitespace removed.
  Result<std::string> ReadLine(const std::string& path) const;

  bool Exists(const std::string& path) const;

  // Names of the entries of directory `path`, sorted, without "." and "..".
  Result<std::vector<std::string>> ListDirectory(const std::string& path) const;

  // The real path of `path` under the root, for APIs that need one.
  std::string RealPath(const std::string& path) const;

 private:
  std::string root_;  // no trailing '/'; "" for the real root
};

}  // namespace orch::fingerprint
