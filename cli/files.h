// Whole-file reads and atomic writes for the CLI (the composition root). Errors name the
// path and the operating system's reason.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "planner/spec_parser.h"

namespace orch::cli {

Result<std::string> ReadFile(const std::string& path);

// The environment variable's value, "" when unset.
std::string EnvOrEmpty(const char* name);

// `path` made absolute and lexically normal (paths go into fingerprints and the hash
// cache); `path` itself when that fails.
std::string AbsolutePath(const std::string& path);

// ReadFile for a file from elsewhere (a bundle): only a regular file of at most
// `max_bytes` is read; a FIFO, a device or a directory is refused before it is opened,
// naming the path and what it is.
Result<std::string> ReadRegularFile(const std::string& path, std::uint64_t max_bytes);

// Writes `content` to a temporary file next to `path`, syncs it and renames it over
// `path`: readers see the old file or the new one, never a partial one.
Status WriteFileAtomically(const std::string& path, const std::string& content);

// Reads the files a spec copies into its plan (planner/source_reader.h): relative paths
// resolve against the spec's directory. Under kSpecDirOnly (the default) an absolute path,
// a ".." escape or a symlink (of the file or of a folder on its way) whose target lies
// outside that directory is refused; in every scope only regular files up to
// planner::kMaxSourceFileBytes are read (FIFOs, devices and directories are refused
// before they are opened). The spec's directory is resolved at each Read. The check and
// the open are two steps: someone who can write the spec's directory during the read could
// swap a folder for a symlink in between (the file itself is re-checked once open).
class FileSourceReader final : public planner::SourceReader {
 public:
  explicit FileSourceReader(std::string base_dir,
                            planner::SourceScope scope = planner::SourceScope::kSpecDirOnly)
      : base_dir_(std::move(base_dir)), scope_(scope) {}
  Result<std::string> Read(const std::string& path) override;
  // The same checks for a file that is not read into the plan (a model file, of any
  // size): its resolved path. NotFound when it does not exist.
  Result<std::string> Locate(const std::string& path) const;

 private:
  std::string base_dir_;  // "" means the working directory
  planner::SourceScope scope_;
};

}  // namespace orch::cli
