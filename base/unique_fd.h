// UniqueFd: sole owner of one file descriptor, closed when the owner goes away.
//
// -1 means "none". Move-only; Release() hands the descriptor to a new owner (an Asio
// stream_descriptor, say) and leaves this one empty. Closing ignores errors: by then
// nothing can be done about them.
#pragma once

#include <unistd.h>

#include <utility>

namespace orch {

class UniqueFd final {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }

  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // The descriptor, which the caller now owns; this becomes empty.
  int Release() { return std::exchange(fd_, -1); }
  // Closes the owned descriptor (if any) and owns `fd` instead.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace orch
