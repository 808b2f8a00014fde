// Pure parsers for the small system files a host probe reads. No I/O; each takes the
// file's text and returns the value or an InvalidArgument naming what was missing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::fingerprint {

// /proc/meminfo -> MemTotal in bytes.
Result<std::int64_t> ParseMemTotalBytes(std::string_view meminfo_text);

// /etc/os-release -> KEY -> value, quotes and escapes removed.
std::map<std::string, std::string> ParseOsRelease(std::string_view text);

// Bytes of libc.so.6 (or any text holding its banner) -> "2.36 (Debian GLIBC 2.36-9)".
// The banner is "GNU C Library (<build>) stable release version <version>."
Result<std::string> ParseGlibcBanner(std::string_view libc_bytes);

// /proc/driver/nvidia/version -> the text after "NVRM version:" on its line, trimmed.
Result<std::string> ParseNvidiaKernelModule(std::string_view text);

// /proc/1/cgroup plus the presence of marker files -> "docker", "podman", "kubernetes",
// "lxc", "containerd" or "none". cgroup v2 hosts show "0::/" in containers too, so "none"
// means "none detected".
std::string DetectContainer(bool has_dockerenv, bool has_containerenv,
                            std::string_view init_cgroup_text);

// Removes leading and trailing ASCII whitespace.
std::string_view TrimSpace(std::string_view text);

}  // namespace orch::fingerprint
