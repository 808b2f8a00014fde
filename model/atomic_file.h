// AtomicFile: writes a file so that readers see the old file or the complete new one,
// never a partial one, and hashes the bytes on the way (SHA-256 while writing).
//
// Bytes go to a temporary file next to the target (`PATH.tmp.PID.N`); Commit() flushes,
// fsyncs, renames it over PATH and fsyncs the folder. Destroying an AtomicFile that was
// not committed removes the temporary file and leaves PATH as it was. Two processes
// writing the same PATH at once each rename a complete file; the last rename wins.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/sha256.h"
#include "base/status.h"
#include "model/byte_sink.h"

namespace orch::model {

struct FileDigest {
  std::string sha256;       // lowercase hex
  std::uint64_t bytes = 0;  // file size
};

class AtomicFile final : public ByteSink {
 public:
  // Creates the temporary file. Errors: IoError naming the file (e.g. a missing folder).
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& path);

  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Append(std::string_view bytes) override;
  // Makes the file visible at its path; returns the digest of everything appended.
  // Call at most once; after an error the target is unchanged.
  Result<FileDigest> Commit();

 private:
  AtomicFile(std::string path, std::string temp, int fd);
  Status Flush();

  std::string path_;
  std::string temp_;
  int fd_;  // -1 once closed
  bool committed_ = false;
  std::string buffer_;
  Sha256 hasher_;
  std::uint64_t bytes_ = 0;
};

// Writes `content` to `path` through an AtomicFile.
Result<FileDigest> WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace orch::model
