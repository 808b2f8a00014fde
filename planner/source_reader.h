// SourceReader: how the planner reads the files a spec names and copies into the plan
// (workload `text_file`), and the rules every reader enforces (docs/spec.md, "Files a
// spec reads"). The content of such a file travels with the plan to the coordinator and
// every agent, so by default a reader only reads regular files inside the spec's
// directory. The checks here are lexical (pure); a reader that meets a real file system
// also resolves symlinks and refuses a target outside the directory.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace orch::planner {

// The largest file read into a plan, in bytes (64 MiB), whatever the scope.
inline constexpr std::uint64_t kMaxSourceFileBytes = std::uint64_t{64} << 20;

// Where a reader may read. kSpecDirOnly is the default; kAnywhere is the user's explicit
// choice (orch's --allow-outside-spec-dir) and lifts only the directory rule: special
// files and the size limit are refused in both.
enum class SourceScope { kSpecDirOnly, kAnywhere };

// Reads files a spec refers to. Paths are passed as written in the spec; relative ones
// resolve against the spec's directory. Refusals by the rules above are
// InvalidArgument whose message names the path, the reason and what to do; a file the
// operating system cannot read is NotFound or IoError naming the path and its reason.
class SourceReader {
 public:
  virtual ~SourceReader() = default;
  virtual Result<std::string> Read(const std::string& path) = 0;
};

// The lexical rule of kSpecDirOnly: refuses an empty path, an absolute path and one whose
// ".." components climb out of the spec's directory ("a/../b" is fine, "a/../../b" is
// not). Says nothing about symlinks: that needs the file system.
Status CheckInsideSpecDir(const std::string& path);

// The refusals, worded the same by every reader. `why` says what the path does, e.g.
// "resolves to /etc/passwd, outside the spec's directory /home/me/exp".
Status RefuseOutsideSpecDir(const std::string& path, const std::string& why);
// `kind` names what the path is instead of a regular file: "a directory", "a FIFO", ...
Status RefuseSpecialFile(const std::string& path, const std::string& kind);
Status RefuseTooLarge(const std::string& path, std::uint64_t bytes);

}  // namespace orch::planner
