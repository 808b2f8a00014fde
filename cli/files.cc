#include "cli/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/errno_status.h"
#include "model/atomic_file.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using planner::kMaxSourceFileBytes;

// realpath(3): absolute, every symlink resolved; the file must exist.
Result<std::string> RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return ErrnoPathError("cannot open " + path, errno);
  std::string out(real);
  std::free(real);
  return out;
}

// `real` (resolved) must lie in `base_dir` (resolved here) or below it.
Status CheckWithin(const std::string& path, const std::string& real, const std::string& base_dir) {
  ORCH_ASSIGN_OR_RETURN(std::string base, RealPath(base_dir));
  fs::path rel = fs::path(real).lexically_relative(base);
  if (!rel.empty() && *rel.begin() != "..") return Status::Ok();
  return planner::RefuseOutsideSpecDir(
      path, "resolves to " + real + ", outside the spec's directory " + base);
}

const char* SpecialKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status CheckRegularAndSmall(const struct stat& st, const std::string& path) {
  if (!S_ISREG(st.st_mode)) return planner::RefuseSpecialFile(path, SpecialKind(st.st_mode));
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxSourceFileBytes) return planner::RefuseTooLarge(path, size);
  return Status::Ok();
}

// Reads at most kMaxSourceFileBytes from `fd`, which must still be the file `before`
// describes (it could have been replaced between the check and the open).
Result<std::string> ReadOpened(int fd, const struct stat& before, const std::string& path,
                               const std::string& real) {
  struct stat now {};
  if (::fstat(fd, &now) != 0) return ErrnoPathError("cannot stat " + real, errno);
  if (now.st_dev != before.st_dev || now.st_ino != before.st_ino) {
    return IoError(real + " was replaced while being opened; try again");
  }
  ORCH_RETURN_IF_ERROR(CheckRegularAndSmall(now, path));
  std::string content;
  char buffer[1 << 16];
  while (content.size() <= kMaxSourceFileBytes) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoPathError("cannot read " + real, errno);
    if (n == 0) return content;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  return planner::RefuseTooLarge(path, content.size());
}

// Checks the kind and size before opening (opening a FIFO or a device can block or act),
// then reads without following a symlink swapped in at the last component.
Result<std::string> ReadRegularFile(const std::string& real, const std::string& path) {
  struct stat before {};
  if (::stat(real.c_str(), &before) != 0) return ErrnoPathError("cannot open " + real, errno);
  ORCH_RETURN_IF_ERROR(CheckRegularAndSmall(before, path));
  int fd = ::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoPathError("cannot open " + real, errno);
  Result<std::string> content = ReadOpened(fd, before, path, real);
  ::close(fd);
  return content;
}

}  // namespace

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ignored;
  fs::path absolute = fs::absolute(path, ignored);
  return absolute.empty() ? path : absolute.lexically_normal().string();
}

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return IoError("cannot read " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoPathError("cannot open " + path, errno);
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return ErrnoPathError("cannot read " + path, errno);
  return content.str();
}

Result<std::string> ReadRegularFile(const std::string& path, std::uint64_t max_bytes) {
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec) return IoError("cannot open " + path + ": " + ec.message());
  if (!std::filesystem::is_regular_file(status)) {
    return InvalidArgument(path + " is not a regular file (a directory, FIFO or device)");
  }
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) {
    return InvalidArgument(path + " is " + std::to_string(size >> 20) + " MiB, above the " +
                           std::to_string(max_bytes >> 20) + " MiB limit");
  }
  return ReadFile(path);
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  // model::AtomicFile fsyncs the file and, after the rename, its folder: a crash never
  // leaves a partial file, nor a rename that is lost (e.g. a spent bundle sequence number).
  return model::WriteFileAtomically(path, content).status();
}

Result<std::string> FileSourceReader::Locate(const std::string& path) const {
  bool confined = scope_ == planner::SourceScope::kSpecDirOnly;
  if (confined) ORCH_RETURN_IF_ERROR(planner::CheckInsideSpecDir(path));
  std::string base = base_dir_.empty() ? "." : base_dir_;
  fs::path full(path);
  if (full.is_relative()) full = fs::path(base) / full;
  ORCH_ASSIGN_OR_RETURN(std::string real, RealPath(full.string()));
  if (confined) ORCH_RETURN_IF_ERROR(CheckWithin(path, real, base));
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return ErrnoPathError("cannot open " + real, errno);
  if (!S_ISREG(st.st_mode)) return planner::RefuseSpecialFile(path, SpecialKind(st.st_mode));
  return real;
}

Result<std::string> FileSourceReader::Read(const std::string& path) {
  ORCH_ASSIGN_OR_RETURN(std::string real, Locate(path));
  return ReadRegularFile(real, path);
}

}  // namespace orch::cli
