#include "cli/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace orch::cli {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return IoError(what + " " + path + ": " + std::strerror(errno));
}

Status WriteAll(int fd, const std::string& content, const std::string& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write", path);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return Errno("fsync", path);
  return Status::Ok();
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return IoError("cannot read " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("cannot open", path);
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return Errno("cannot read", path);
  return content.str();
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", temp);
  Status written = WriteAll(fd, content, temp);
  ::close(fd);
  if (written.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    written = Errno("cannot rename onto", path);
  }
  if (!written.ok()) std::remove(temp.c_str());
  return written;
}

Result<std::string> FileSourceReader::Read(const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(base_dir_) / p;
  return ReadFile(p.string());
}

}  // namespace orch::cli
