// Whole-file reads and atomic writes for the CLI (the composition root). Errors name the
// path and the operating system's reason.
#pragma once

#include <string>

#include "base/status.h"
#include "planner/spec_parser.h"

namespace orch::cli {

Result<std::string> ReadFile(const std::string& path);

// Writes `content` to a temporary file next to `path`, syncs it and renames it over
// `path`: readers see the old file or the new one, never a partial one.
Status WriteFileAtomically(const std::string& path, const std::string& content);

// Reads files a spec refers to; relative paths resolve against the spec's directory.
class FileSourceReader final : public planner::SourceReader {
 public:
  explicit FileSourceReader(std::string base_dir) : base_dir_(std::move(base_dir)) {}
  Result<std::string> Read(const std::string& path) override;

 private:
  std::string base_dir_;
};

}  // namespace orch::cli
