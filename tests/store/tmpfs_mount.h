// A size-limited tmpfs mounted under a fresh temporary directory for the life of the
// object, so a test can fill a disk for real. Needs CAP_SYS_ADMIN (the tests run as
// root); where mounting is refused, error() says why and the test skips saying so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "tests/store/store_harness.h"

namespace orch::store {

class TmpfsMount {
 public:
  explicit TmpfsMount(uint64_t bytes);
  ~TmpfsMount();  // unmounts (lazily if still busy)
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& path() const { return dir_.path(); }

  // Writes `file` until the filesystem refuses (ENOSPC); returns the bytes written.
  uint64_t Fill(const std::filesystem::path& file) const;

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace orch::store
