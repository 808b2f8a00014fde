#include "planner/source_reader.h"

#include <filesystem>

namespace orch::planner {
namespace {

std::string Quoted(const std::string& path) { return "\"" + path + "\""; }

}  // namespace

Status CheckInsideSpecDir(const std::string& path) {
  if (path.empty()) return RefuseOutsideSpecDir(path, "names no file");
  std::filesystem::path p(path);
  if (p.is_absolute()) return RefuseOutsideSpecDir(path, "is an absolute path");
  std::filesystem::path normal = p.lexically_normal();
  if (!normal.empty() && *normal.begin() == "..") {
    return RefuseOutsideSpecDir(path, "climbs out of the spec's directory through \"..\"");
  }
  return Status::Ok();
}

Status RefuseOutsideSpecDir(const std::string& path, const std::string& why) {
  return InvalidArgument(Quoted(path) + " " + why +
                         "; files a spec names must lie in the spec's directory or "
                         "below it: move the file there, or pass --allow-outside-spec-dir "
                         "to read it where it is");
}

Status RefuseSpecialFile(const std::string& path, const std::string& kind) {
  return InvalidArgument(Quoted(path) + " is " + kind +
                         ", not a regular file; name a regular file");
}

Status RefuseTooLarge(const std::string& path, std::uint64_t bytes) {
  return InvalidArgument(Quoted(path) + " is " + std::to_string(bytes) +
                         " bytes, over the limit of " + std::to_string(kMaxSourceFileBytes >> 20) +
                         " MiB for a file read into the plan; use a shorter text");
}

}  // namespace orch::planner
