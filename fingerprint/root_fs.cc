#include "fingerprint/root_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/errno_status.h"

namespace orch::fingerprint {
namespace {

// Closes a file descriptor on scope exit.
class FdCloser final {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

RootFs::RootFs(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string RootFs::RealPath(const std::string& path) const {
  if (root_.empty()) return path;
  return root_ + (path.starts_with('/') ? "" : "/") + path;
}

Result<std::string> RootFs::ReadFile(const std::string& path, std::size_t max_bytes) const {
  int fd = ::open(RealPath(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoPathError(path, errno);
  FdCloser closer(fd);
  std::string text;
  char buffer[65536];
  while (text.size() < max_bytes) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoPathError(path, errno);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  if (text.size() > max_bytes) text.resize(max_bytes);
  return text;
}

Result<std::string> RootFs::ReadLine(const std::string& path) const {
  ORCH_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  return text;
}

bool RootFs::Exists(const std::string& path) const {
  struct stat info;
  return ::lstat(RealPath(path).c_str(), &info) == 0;
}

Result<std::vector<std::string>> RootFs::ListDirectory(const std::string& path) const {
  DIR* dir = ::opendir(RealPath(path).c_str());
  if (dir == nullptr) return ErrnoPathError(path, errno);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace orch::fingerprint
