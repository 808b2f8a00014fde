#include "tests/store/tmpfs_mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace orch::store {

TmpfsMount::TmpfsMount(uint64_t bytes) {
  std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
  if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, options.c_str()) == 0) {
    mounted_ = true;
  } else {
    error_ = "mount tmpfs on " + dir_.path().string() + ": " + std::strerror(errno) +
             " (needs root / CAP_SYS_ADMIN)";
  }
}

TmpfsMount::~TmpfsMount() {
  if (!mounted_) return;
  if (::umount2(dir_.path().c_str(), 0) != 0) ::umount2(dir_.path().c_str(), MNT_DETACH);
}

uint64_t TmpfsMount::Fill(const std::filesystem::path& file) const {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  std::vector<char> block(4096, 'f');
  uint64_t written = 0;
  for (;;) {
    ssize_t n = ::write(fd, block.data(), block.size());
    if (n <= 0) break;
    written += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return written;
}

}  // namespace orch::store
