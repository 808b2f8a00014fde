#include "fingerprint/file_hasher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/errno_status.h"
#include "base/sha256.h"

namespace orch::fingerprint {
namespace {

constexpr std::size_t kBlockBytes = 1 << 20;

FileIdentity IdentityOf(const std::string& path, const struct stat& info) {
  FileIdentity identity;
  identity.path = path;
  identity.size = static_cast<std::uint64_t>(info.st_size);
  identity.mtime_ns =
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  identity.inode = info.st_ino;
  identity.device = info.st_dev;
  identity.ctime_ns =
      static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1'000'000'000 + info.st_ctim.tv_nsec;
  return identity;
}

// Hashes an open descriptor to EOF.
Result<std::string> HashDescriptor(int fd, const std::string& path) {
  Sha256 hasher;
  std::vector<char> block(kBlockBytes);
  while (true) {
    ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoPathError("read " + path, errno);
    if (n == 0) break;
    hasher.Update(std::string_view(block.data(), static_cast<std::size_t>(n)));
  }
  return ToHex(hasher.Finish());
}

}  // namespace

Result<FileIdentity> CurrentIdentity(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return ErrnoPathError("stat " + path, errno);
  return IdentityOf(path, info);
}

Result<FileHash> FileHasher::Hash(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoPathError("open " + path, errno);
  struct stat before;
  if (::fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) {
    ::close(fd);
    return IoError("hash " + path + ": not a regular file");
  }
  FileIdentity identity = IdentityOf(path, before);
  if (std::optional<std::string> cached = cache_.Find(identity)) {
    ::close(fd);
    return FileHash{*cached, identity.size};
  }
  ++files_read_;
  Result<std::string> sha256 = HashDescriptor(fd, path);
  struct stat after;
  bool unchanged = ::fstat(fd, &after) == 0 && IdentityOf(path, after) == identity;
  ::close(fd);
  if (!sha256.ok()) return sha256.status();
  if (unchanged) (void)cache_.Put(identity, *sha256);  // a lost entry only costs time
  return FileHash{*sha256, identity.size};
}

}  // namespace orch::fingerprint
