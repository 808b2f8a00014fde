#include "tests/chaos/tmpfs_mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace orch::testing {

std::unique_ptr<TmpfsMount> TmpfsMount::Mount(const std::filesystem::path& dir, std::uint64_t bytes,
                                              std::string* why) {
  if (::geteuid() != 0) {
    *why = "mounting a tmpfs needs root";
    return nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    *why = "mount tmpfs on " + dir.string() + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<TmpfsMount>(new TmpfsMount(dir));
}

TmpfsMount::~TmpfsMount() {
  Release();
  if (::umount2(dir_.c_str(), 0) != 0) ::umount2(dir_.c_str(), MNT_DETACH);
}

std::uint64_t TmpfsMount::Fill() {
  int fd = ::open((dir_ / ".ballast").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  std::vector<char> block(64 * 1024, 'x');
  std::uint64_t written = 0;
  for (std::size_t size = block.size(); size > 0;) {  // ends: tmpfs is bounded
    ssize_t n = ::write(fd, block.data(), size);
    if (n > 0) {
      written += static_cast<std::uint64_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      size /= 2;  // the last blocks: fill to the last byte
    }
  }
  ::close(fd);
  return written;
}

void TmpfsMount::Release() {
  std::error_code ec;
  std::filesystem::remove(dir_ / ".ballast", ec);
}

std::uint64_t TmpfsMount::Free() const {
  struct statvfs s {};
  if (::statvfs(dir_.c_str(), &s) != 0) return 0;
  return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
}

}  // namespace orch::testing
