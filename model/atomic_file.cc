#include "model/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/errno_status.h"

namespace orch::model {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

// A name no other writer in this process or another one uses at the same time.
std::string TempName(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Makes a rename durable; a folder that cannot be opened is not an error (the rename
// itself succeeded; only durability across a power cut is at stake).
void SyncFolderOf(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path) {
  std::string temp = TempName(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create " + temp, errno);
  return std::unique_ptr<AtomicFile>(new AtomicFile(path, std::move(temp), fd));
}

AtomicFile::AtomicFile(std::string path, std::string temp, int fd)
    : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) std::remove(temp_.c_str());
}

Status AtomicFile::Append(std::string_view bytes) {
  hasher_.Update(bytes);
  bytes_ += bytes.size();
  buffer_.append(bytes);
  return buffer_.size() >= kBufferBytes ? Flush() : Status::Ok();
}

Status AtomicFile::Flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write " + temp_, errno);
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

Result<FileDigest> AtomicFile::Commit() {
  ORCH_CHECK(fd_ >= 0 && !committed_) << "AtomicFile::Commit called twice for " << path_;
  ORCH_RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return ErrnoError("fsync " + temp_, errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return ErrnoError("close " + temp_, errno);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0)
    return ErrnoError("cannot rename onto " + path_, errno);
  committed_ = true;
  SyncFolderOf(path_);
  return FileDigest{ToHex(hasher_.Finish()), bytes_};
}

Result<FileDigest> WriteFileAtomically(const std::string& path, std::string_view content) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  ORCH_RETURN_IF_ERROR(file->Append(content));
  return file->Commit();
}

}  // namespace orch::model
