#include "cli/driver_lookup.h"

#include <cctype>
#include <filesystem>

namespace orch::cli {

namespace fs = std::filesystem;

std::vector<std::string> DefaultDriverCandidates(const std::string& exe_dir,
                                                 const std::string& release) {
  std::string name = "orch-driver-llamacpp-" + release;
  return {
      (fs::path(exe_dir) / name).lexically_normal().string(),
      (fs::path(exe_dir) / ".." / "lib" / "orch" / "drivers" / name).lexically_normal().string(),
      (fs::path(exe_dir) / ".." / "drivers" / "llamacpp" / name).lexically_normal().string()};
}

std::string JoinPlaces(const std::vector<std::string>& places) {
  std::string joined;
  for (size_t i = 0; i < places.size(); ++i) {
    joined += (i == 0 ? "" : i + 1 == places.size() ? " and " : ", ") + places[i];
  }
  return joined;
}

std::optional<std::string> LlamaCppRelease(std::string_view engine) {
  constexpr std::string_view kPrefix = "llama.cpp@";
  if (!engine.starts_with(kPrefix)) return std::nullopt;
  std::string_view release = engine.substr(kPrefix.size());
  if (release.empty() || release.front() == '.') return std::nullopt;
  for (char c : release) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return std::nullopt;
    }
  }
  return std::string(release);
}

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

}  // namespace orch::cli
