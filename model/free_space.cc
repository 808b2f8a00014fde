#include "model/free_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace orch::model {
namespace {

constexpr std::uint64_t kMarginBaseBytes = 64ull << 20;

// Per type, the bits a weight takes including its block's scales (q4_0: 18 bytes per
// 32 weights = 4.5). For a k-quant mixture, those of the widest type it gives any of
// its layer tensors (q4_k_m puts some in q6_k: 6.5625), not its average, so that
// counting every weight at this rate bounds the mixture from above.
constexpr std::pair<std::string_view, double> kBitsPerWeight[] = {
    {"f32", 32},     {"f16", 16},     {"bf16", 16},       {"q8_0", 8.5},      {"q6_k", 6.5625},
    {"q5_1", 6},     {"q5_0", 5.5},   {"q5_k_m", 6.5625}, {"q5_k_s", 5.5},    {"q4_1", 5},
    {"q4_0", 4.5},   {"iq4_nl", 4.5}, {"iq4_xs", 4.25},   {"q4_k_m", 6.5625}, {"q4_k_s", 5.5},
    {"q3_k_l", 5.5}, {"q3_k_m", 4.5}, {"q3_k_s", 3.4375}, {"q2_k", 4.5},
};

}  // namespace

Result<std::uint64_t> StatvfsFreeSpace(const std::string& dir) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) {
    return IoError("statvfs " + dir + ": " + std::strerror(errno));
  }
  return static_cast<std::uint64_t>(info.f_bavail) * static_cast<std::uint64_t>(info.f_frsize);
}

std::uint64_t FreeSpaceMargin(std::uint64_t bytes) { return kMarginBaseBytes + bytes / 8; }

Status CheckFreeSpace(const std::string& dir, std::string_view what, std::uint64_t bytes,
                      const FreeSpaceReader& free_space) {
  Result<std::uint64_t> available = free_space(dir);
  if (!available.ok()) return available.status().WithContext("free space of " + dir);
  std::uint64_t needed = bytes + FreeSpaceMargin(bytes);
  if (*available >= needed) return Status::Ok();
  return IoError("not enough free space in " + dir + " to write " + std::string(what) +
                 ": it needs " + DescribeBytes(needed) + " (" + std::to_string(bytes) +
                 " bytes and a margin of " + std::to_string(needed - bytes) + "), " +
                 DescribeBytes(*available) + " are free; nothing was written");
}

std::optional<double> BitsPerWeight(std::string_view type) {
  for (const auto& [name, bits] : kBitsPerWeight) {
    if (name == type) return bits;
  }
  return std::nullopt;
}

// An upper bound on the quantized weights, not an exact size: every weight of the
// source (at the source type's bits) is counted at the target's bits as the table
// above rounds them up. llama.cpp keeps norms (1-D, a fraction of a percent of a
// model) as they are and may give the output tensor a wider type (q6_k, q8_0); the
// margin CheckFreeSpace adds covers both. A type not in the table counts as f16
// for a source (the usual one) and f32 for a target (the widest).
std::uint64_t QuantizedSizeBound(std::uint64_t source_bytes, std::string_view source_type,
                                 std::string_view target_type) {
  double source_bits = BitsPerWeight(source_type).value_or(16);
  double target_bits = BitsPerWeight(target_type).value_or(32);
  return static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(source_bytes) * target_bits / source_bits));
}

std::string DescribeBytes(std::uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%llu bytes (%.1f GiB)", static_cast<unsigned long long>(bytes),
                static_cast<double>(bytes) / static_cast<double>(1ull << 30));
  return text;
}

}  // namespace orch::model
