#include "fingerprint/system_file_parsers.h"

#include <cctype>
#include <sstream>
#include <utility>

namespace orch::fingerprint {
namespace {

std::string Unquote(std::string_view value) {
  if (value.size() < 2 || (value.front() != '"' && value.front() != '\'') ||
      value.back() != value.front()) {
    return std::string(value);
  }
  std::string out;
  for (std::size_t i = 1; i + 1 < value.size(); ++i) {
    if (value[i] == '\\' && i + 2 < value.size()) ++i;
    out.push_back(value[i]);
  }
  return out;
}

std::string_view FirstLine(std::string_view text) {
  return text.substr(0, text.find_first_of("\n\r"));
}

}  // namespace

std::string_view TrimSpace(std::string_view text) {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)); };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

Result<std::int64_t> ParseMemTotalBytes(std::string_view meminfo_text) {
  std::istringstream lines{std::string(meminfo_text)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("MemTotal:")) continue;
    std::istringstream fields(line.substr(9));
    std::int64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB" && kib > 0) return kib * 1024;
    return InvalidArgument("malformed MemTotal line: " + line);
  }
  return InvalidArgument("no MemTotal line");
}

std::map<std::string, std::string> ParseOsRelease(std::string_view text) {
  std::map<std::string, std::string> fields;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    std::string_view trimmed = TrimSpace(line);
    auto equals = trimmed.find('=');
    if (trimmed.starts_with('#') || equals == std::string_view::npos) continue;
    fields[std::string(trimmed.substr(0, equals))] = Unquote(trimmed.substr(equals + 1));
  }
  return fields;
}

Result<std::string> ParseGlibcBanner(std::string_view libc_bytes) {
  constexpr std::string_view kBanner = "GNU C Library (";
  constexpr std::string_view kRelease = "release version ";
  auto start = libc_bytes.find(kBanner);
  if (start == std::string_view::npos) return NotFound("no GNU C Library banner");
  std::string_view banner = libc_bytes.substr(start);
  banner = banner.substr(0, banner.find_first_of(std::string_view("\n\0", 2)));
  auto close = banner.find(')');
  auto release = banner.find(kRelease);
  if (close == std::string_view::npos || release == std::string_view::npos) {
    return InvalidArgument("malformed glibc banner: " + std::string(banner));
  }
  std::string_view version = banner.substr(release + kRelease.size());
  while (!version.empty() && (version.back() == '.' || std::isspace(version.back()))) {
    version.remove_suffix(1);
  }
  std::string_view build = banner.substr(kBanner.size(), close - kBanner.size());
  return std::string(version) + " (" + std::string(build) + ")";
}

Result<std::string> ParseNvidiaKernelModule(std::string_view text) {
  constexpr std::string_view kPrefix = "NVRM version:";
  auto start = text.find(kPrefix);
  if (start == std::string_view::npos) return InvalidArgument("no \"NVRM version:\" line");
  std::string_view rest = TrimSpace(FirstLine(text.substr(start + kPrefix.size())));
  std::string collapsed;
  for (char c : rest) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space || (!collapsed.empty() && collapsed.back() != ' ')) {
      collapsed.push_back(space ? ' ' : c);
    }
  }
  return collapsed;
}

std::string DetectContainer(bool has_dockerenv, bool has_containerenv,
                            std::string_view init_cgroup_text) {
  if (has_dockerenv) return "docker";
  if (has_containerenv) return "podman";
  for (auto [marker, name] : {std::pair{"kubepods", "kubernetes"}, std::pair{"docker", "docker"},
                              std::pair{"libpod", "podman"}, std::pair{"lxc", "lxc"},
                              std::pair{"containerd", "containerd"}}) {
    if (init_cgroup_text.find(marker) != std::string_view::npos) return name;
  }
  return "none";
}

}  // namespace orch::fingerprint
