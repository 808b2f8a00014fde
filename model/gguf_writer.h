// GgufWriter: lays out a GGUF v3 file (docs/models.md) whose tensor data the caller
// streams. Everything is written explicitly little-endian, field by field.
//
// Usage: add metadata and tensor declarations, write Header(), then for each tensor in
// declaration order its TensorDataBytes() of data followed by PaddingAfter(i) zero bytes.
// The writer appends `general.alignment` (u32, kGgufAlignment) after the caller's keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf_types.h"

namespace orch::model {

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;  // ggml order: ne[0] varies fastest (a row's length)
  GgmlType type = GgmlType::kF32;
  std::uint64_t offset = 0;  // from the start of the data section
  std::uint64_t bytes = 0;   // data bytes, without padding
};

class GgufWriter final {
 public:
  GgufWriter() = default;

  void AddU32(const std::string& key, std::uint32_t value);
  void AddI32(const std::string& key, std::int32_t value);
  void AddF32(const std::string& key, float value);
  void AddBool(const std::string& key, bool value);
  void AddString(const std::string& key, const std::string& value);
  void AddStringArray(const std::string& key, const std::vector<std::string>& values);
  void AddI32Array(const std::string& key, const std::vector<std::int32_t>& values);
  void AddF32Array(const std::string& key, const std::vector<float>& values);

  // Declares the next tensor. Precondition: `type` is not block-quantized and ne is
  // non-empty (checked).
  void AddTensor(const std::string& name, std::vector<std::uint64_t> ne, GgmlType type);

  // Magic, version, counts, metadata, tensor infos, and zero padding up to the data.
  std::string Header() const;
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // Zero bytes that follow tensor `index`'s data.
  std::uint64_t PaddingAfter(std::size_t index) const;
  // Size of the whole file.
  std::uint64_t FileBytes() const;

 private:
  void AddKey(const std::string& key, GgufValueType type);

  std::string metadata_;  // encoded key/value pairs
  std::uint64_t kv_count_ = 0;
  std::vector<GgufTensorInfo> tensors_;
  std::uint64_t data_bytes_ = 0;  // aligned end of the last tensor
};

}  // namespace orch::model
