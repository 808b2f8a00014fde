// Little-endian binary encoding helpers for orch's own compact formats (digest records,
// chunk framing, driver frames). Writers append to a std::string; ByteReader reads from
// a view and reports running past the end instead of reading out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace orch {

inline void AppendU8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }

template <typename T>
void AppendLittleEndian(std::string& out, T value) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
}

inline void AppendU32(std::string& out, std::uint32_t v) { AppendLittleEndian(out, v); }
inline void AppendU64(std::string& out, std::uint64_t v) { AppendLittleEndian(out, v); }
inline void AppendI32(std::string& out, std::int32_t v) { AppendLittleEndian(out, v); }
inline void AppendF32(std::string& out, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  AppendU32(out, bits);
}
inline void AppendF64(std::string& out, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  AppendU64(out, bits);
}

// Reads fixed-size little-endian values in order. Every Read returns false (and leaves
// the output unchanged) when fewer bytes remain than it needs.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  std::size_t remaining() const { return bytes_.size() - offset_; }
  std::size_t offset() const { return offset_; }

  template <typename T>
  bool ReadLittleEndian(T* value) {
    static_assert(std::is_integral_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::make_unsigned_t<T> u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>(bytes_[offset_ + i]))
           << (8 * i);
    }
    offset_ += sizeof(T);
    *value = static_cast<T>(u);
    return true;
  }
  bool ReadU8(std::uint8_t* v) { return ReadLittleEndian(v); }
  bool ReadU32(std::uint32_t* v) { return ReadLittleEndian(v); }
  bool ReadU64(std::uint64_t* v) { return ReadLittleEndian(v); }
  bool ReadI32(std::int32_t* v) { return ReadLittleEndian(v); }
  bool ReadF32(float* v) {
    std::uint32_t bits;
    if (!ReadU32(&bits)) return false;
    std::memcpy(v, &bits, sizeof(bits));
    return true;
  }
  bool ReadF64(double* v) {
    std::uint64_t bits;
    if (!ReadU64(&bits)) return false;
    std::memcpy(v, &bits, sizeof(bits));
    return true;
  }
  // A view of the next `size` bytes.
  bool ReadBytes(std::size_t size, std::string_view* out) {
    if (remaining() < size) return false;
    *out = bytes_.substr(offset_, size);
    offset_ += size;
    return true;
  }

 private:
  std::string_view bytes_;
  std::size_t offset_ = 0;
};

}  // namespace orch
