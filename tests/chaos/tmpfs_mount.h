// A small tmpfs mounted on an empty directory for as long as the object lives, and a
// ballast file that fills it to the last byte, to give a process a real full disk
// (ENOSPC) and take it away again. The destructor removes the ballast and unmounts
// (lazily when a process still holds files there), also when the test failed. Needs root:
// Mount says why not otherwise.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace orch::testing {

class TmpfsMount {
 public:
  static std::unique_ptr<TmpfsMount> Mount(const std::filesystem::path& dir, std::uint64_t bytes,
                                           std::string* why);
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Writes DIR/.ballast until the file system refuses (ENOSPC); the bytes written.
  std::uint64_t Fill();
  // Removes the ballast: the space is back at once.
  void Release();
  // Free bytes now.
  std::uint64_t Free() const;

 private:
  explicit TmpfsMount(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

}  // namespace orch::testing
