// GGUF v3 constants shared by the writer and the reader (the format of llama.cpp's
// ggml/include/gguf.h and ggml.h; see docs/models.md). Values are the on-disk numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace orch::model {

inline constexpr std::string_view kGgufMagic = "GGUF";
inline constexpr std::uint32_t kGgufVersion = 3;
// Tensor data starts, and every tensor's data begins, at a multiple of this.
inline constexpr std::uint32_t kGgufAlignment = 32;

enum class GgufValueType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// Tensor element types orch writes or reads back (a subset of ggml_type).
enum class GgmlType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ8_0 = 8,
  kBF16 = 30,
};

// Bytes of a row-major tensor of `elements` values of `type`, or nullopt when the type is
// unknown here or `elements` is not a whole number of its blocks.
std::optional<std::uint64_t> TensorDataBytes(std::uint32_t type, std::uint64_t elements);

// `offset` rounded up to the next multiple of kGgufAlignment.
inline std::uint64_t AlignUp(std::uint64_t offset) {
  return (offset + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment;
}

}  // namespace orch::model
