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

std::vector<std::string> ServerDriverCandidates(const std::string& exe_dir,
                                                const std::string& family) {
  std::string name = "orch-driver-" + family;
  return {
      (fs::path(exe_dir) / name).lexically_normal().string(),
      (fs::path(exe_dir) / ".." / "lib" / "orch" / "drivers" / name).lexically_normal().string(),
      (fs::path(exe_dir) / ".." / "drivers" / "server" / name).lexically_normal().string()};
}

std::vector<std::string> LlamaServerCandidates(const std::string& exe_dir,
                                               const std::string& release) {
  std::string name = "llama-server-" + release;
  return {
      (fs::path(exe_dir) / ".." / "lib" / "orch" / "servers" / name).lexically_normal().string(),
      (fs::path(exe_dir) / ".." / "drivers" / "server" / name).lexically_normal().string()};
}

std::string JoinPlaces(const std::vector<std::string>& places) {
  std::string joined;
  for (size_t i = 0; i < places.size(); ++i) {
    joined += (i == 0 ? "" : i + 1 == places.size() ? " and " : ", ") + places[i];
  }
  return joined;
}

namespace {

// The part after `prefix` when it is a plain name (it becomes part of a file name).
std::optional<std::string> PlainRelease(std::string_view engine, std::string_view prefix) {
  if (!engine.starts_with(prefix)) return std::nullopt;
  std::string_view release = engine.substr(prefix.size());
  if (release.empty() || release.front() == '.') return std::nullopt;
  for (char c : release) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return std::nullopt;
    }
  }
  return std::string(release);
}

}  // namespace

std::optional<std::string> LlamaServerRelease(std::string_view engine) {
  return PlainRelease(engine, "llama-server@");
}

std::optional<std::string> LlamaCppRelease(std::string_view engine) {
  return PlainRelease(engine, "llama.cpp@");
}

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

}  // namespace orch::cli
