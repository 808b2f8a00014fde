// Disk space for the model files orch writes into a model cache (generated synth
// models, quantized variants): what a write needs and whether the folder's file
// system has it, checked before the first byte is written, so a write that cannot fit
// never fills the disk that every later job needs too.
//
// The checks are pure: the free space comes through a FreeSpaceReader, so tests can
// give any number; StatvfsFreeSpace is the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::model {

// Bytes an unprivileged process may still write on the file system holding `dir`.
using FreeSpaceReader = std::function<Result<std::uint64_t>(const std::string& dir)>;

// statvfs(dir): f_bavail * f_frsize. kIoError naming `dir` when it fails.
Result<std::uint64_t> StatvfsFreeSpace(const std::string& dir);

// What is kept free beyond a write of `bytes`: 64 MiB plus an eighth of it (the
// file's metadata, estimates that run short, the other files of a busy cache).
std::uint64_t FreeSpaceMargin(std::uint64_t bytes);

// Ok when `dir`'s file system has `bytes` plus FreeSpaceMargin(bytes) free. Else
// kIoError (what the write would have met: no space left) naming the folder, what
// would be written, the bytes needed and the bytes free; a reader's error comes back
// with `dir` as context.
Status CheckFreeSpace(const std::string& dir, std::string_view what, std::uint64_t bytes,
                      const FreeSpaceReader& free_space);

// Bits per weight of a llama.cpp weight type by its orch name ("f16", "q4_0",
// "q4_k_m", ...), rounded up over its blocks' scales; nullopt for an unknown name.
std::optional<double> BitsPerWeight(std::string_view type);

// An estimate of the size of `source_bytes` of a `source_type` GGUF quantized to
// `target_type` (see the .cc for why it bounds the weights from above).
std::uint64_t QuantizedSizeBound(std::uint64_t source_bytes, std::string_view source_type,
                                 std::string_view target_type);

// "549755813888 bytes (512.0 GiB)": a size in messages.
std::string DescribeBytes(std::uint64_t bytes);

}  // namespace orch::model
