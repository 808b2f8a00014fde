#include "model/gguf_writer.h"

#include "base/bytes.h"
#include "base/check.h"

namespace orch::model {
namespace {

void AppendString(std::string& out, const std::string& value) {
  AppendU64(out, value.size());
  out += value;
}

void AppendArrayHeader(std::string& out, GgufValueType type, std::size_t count) {
  AppendU32(out, static_cast<std::uint32_t>(type));
  AppendU64(out, count);
}

}  // namespace

std::optional<std::uint64_t> TensorDataBytes(std::uint32_t type, std::uint64_t elements) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return elements * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return elements * 2;
    case GgmlType::kQ4_0:  // blocks of 32: f16 scale + 16 bytes of nibbles
      if (elements % 32 != 0) return std::nullopt;
      return elements / 32 * 18;
    case GgmlType::kQ8_0:  // blocks of 32: f16 scale + 32 int8
      if (elements % 32 != 0) return std::nullopt;
      return elements / 32 * 34;
  }
  return std::nullopt;
}

void GgufWriter::AddKey(const std::string& key, GgufValueType type) {
  AppendString(metadata_, key);
  AppendU32(metadata_, static_cast<std::uint32_t>(type));
  ++kv_count_;
}

void GgufWriter::AddU32(const std::string& key, std::uint32_t value) {
  AddKey(key, GgufValueType::kU32);
  AppendU32(metadata_, value);
}

void GgufWriter::AddI32(const std::string& key, std::int32_t value) {
  AddKey(key, GgufValueType::kI32);
  AppendI32(metadata_, value);
}

void GgufWriter::AddF32(const std::string& key, float value) {
  AddKey(key, GgufValueType::kF32);
  AppendF32(metadata_, value);
}

void GgufWriter::AddBool(const std::string& key, bool value) {
  AddKey(key, GgufValueType::kBool);
  AppendU8(metadata_, value ? 1 : 0);
}

void GgufWriter::AddString(const std::string& key, const std::string& value) {
  AddKey(key, GgufValueType::kString);
  AppendString(metadata_, value);
}

void GgufWriter::AddStringArray(const std::string& key, const std::vector<std::string>& values) {
  AddKey(key, GgufValueType::kArray);
  AppendArrayHeader(metadata_, GgufValueType::kString, values.size());
  for (const std::string& value : values) AppendString(metadata_, value);
}

void GgufWriter::AddI32Array(const std::string& key, const std::vector<std::int32_t>& values) {
  AddKey(key, GgufValueType::kArray);
  AppendArrayHeader(metadata_, GgufValueType::kI32, values.size());
  for (std::int32_t value : values) AppendI32(metadata_, value);
}

void GgufWriter::AddF32Array(const std::string& key, const std::vector<float>& values) {
  AddKey(key, GgufValueType::kArray);
  AppendArrayHeader(metadata_, GgufValueType::kF32, values.size());
  for (float value : values) AppendF32(metadata_, value);
}

void GgufWriter::AddTensor(const std::string& name, std::vector<std::uint64_t> ne, GgmlType type) {
  ORCH_CHECK(!ne.empty() && ne.size() <= 4) << "tensor " << name << ": 1 to 4 dimensions";
  ORCH_CHECK(type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16)
      << "tensor " << name << ": GgufWriter writes unquantized tensors only";
  std::uint64_t elements = 1;
  for (std::uint64_t n : ne) elements *= n;
  std::uint64_t bytes = *TensorDataBytes(static_cast<std::uint32_t>(type), elements);
  tensors_.push_back({name, std::move(ne), type, data_bytes_, bytes});
  data_bytes_ = AlignUp(data_bytes_ + bytes);
}

std::string GgufWriter::Header() const {
  std::string out(kGgufMagic);
  AppendU32(out, kGgufVersion);
  AppendU64(out, tensors_.size());
  AppendU64(out, kv_count_ + 1);
  out += metadata_;
  AppendString(out, "general.alignment");
  AppendU32(out, static_cast<std::uint32_t>(GgufValueType::kU32));
  AppendU32(out, kGgufAlignment);
  for (const GgufTensorInfo& tensor : tensors_) {
    AppendString(out, tensor.name);
    AppendU32(out, static_cast<std::uint32_t>(tensor.ne.size()));
    for (std::uint64_t n : tensor.ne) AppendU64(out, n);
    AppendU32(out, static_cast<std::uint32_t>(tensor.type));
    AppendU64(out, tensor.offset);
  }
  out.resize(AlignUp(out.size()), '\0');
  return out;
}

std::uint64_t GgufWriter::PaddingAfter(std::size_t index) const {
  const GgufTensorInfo& tensor = tensors_.at(index);
  return AlignUp(tensor.offset + tensor.bytes) - (tensor.offset + tensor.bytes);
}

std::uint64_t GgufWriter::FileBytes() const { return Header().size() + data_bytes_; }

}  // namespace orch::model
