#include "model/gguf_reader.h"

#include <limits>

#include "base/bytes.h"

namespace orch::model {
namespace {

// Array items in one file, all arrays together (a 256k-token vocabulary with its scores,
// types and merges is about 1.3M): at most about 370 MB of parsed items.
constexpr std::uint64_t kMaxArrayItems = 1ull << 22;
// The fewest bytes a tensor info takes (name length, no name, one dimension, type,
// offset) and a metadata entry (key length, no key, type, a 1-byte value): a count
// is plausible only if that many fit in what is left of the file, so no count a header
// declares costs memory the file does not back.
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr std::uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;

// The fewest bytes one value of `type` takes in the file (0: not a valid array item).
std::uint64_t MinValueBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
    case GgufValueType::kString:
      return 8;
    default:
      return 0;
  }
}
constexpr std::uint64_t kMaxTensorElements = std::numeric_limits<std::uint64_t>::max() / 4;

Status Malformed(const std::string& what) { return Status(StatusCode::kDataLoss, "gguf: " + what); }

class Parser {
 public:
  explicit Parser(std::string_view bytes) : reader_(bytes) {}

  std::size_t offset() const { return reader_.offset(); }

  bool String(std::string* out) {
    std::uint64_t size = 0;
    std::string_view view;
    if (!reader_.ReadU64(&size) || size > reader_.remaining() ||
        !reader_.ReadBytes(static_cast<std::size_t>(size), &view)) {
      return false;
    }
    *out = std::string(view);
    return true;
  }

  bool U32(std::uint32_t* out) { return reader_.ReadU32(out); }
  bool U64(std::uint64_t* out) { return reader_.ReadU64(out); }

  // A value of `type` (not an array unless `allow_array`).
  bool Value(GgufValueType type, GgufValue* out, bool allow_array) {
    out->type = type;
    switch (type) {
      case GgufValueType::kU8:
      case GgufValueType::kI8:
      case GgufValueType::kBool:
        return Integer<std::uint8_t>(type == GgufValueType::kI8, out);
      case GgufValueType::kU16:
      case GgufValueType::kI16:
        return Integer<std::uint16_t>(type == GgufValueType::kI16, out);
      case GgufValueType::kU32:
      case GgufValueType::kI32:
        return Integer<std::uint32_t>(type == GgufValueType::kI32, out);
      case GgufValueType::kU64:
      case GgufValueType::kI64:
        return Integer<std::uint64_t>(false, out);
      case GgufValueType::kF32: {
        float value = 0;
        if (!reader_.ReadF32(&value)) return false;
        out->real = value;
        return true;
      }
      case GgufValueType::kF64:
        return reader_.ReadF64(&out->real);
      case GgufValueType::kString:
        return String(&out->text);
      case GgufValueType::kArray:
        return allow_array && Array(out);
    }
    return false;
  }

 private:
  template <typename U>
  bool Integer(bool is_signed, GgufValue* out) {
    U value = 0;
    if (!reader_.ReadLittleEndian(&value)) return false;
    using S = std::make_signed_t<U>;
    out->integer = is_signed ? static_cast<std::int64_t>(static_cast<S>(value))
                             : static_cast<std::int64_t>(value);
    return true;
  }

  bool Array(GgufValue* out) {
    std::uint32_t type = 0;
    std::uint64_t count = 0;
    if (!U32(&type) || !U64(&count)) return false;
    out->array_type = static_cast<GgufValueType>(type);
    std::uint64_t min_bytes = MinValueBytes(out->array_type);
    if (min_bytes == 0 || count > reader_.remaining() / min_bytes ||
        count > kMaxArrayItems - items_) {
      return false;
    }
    items_ += count;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (!Value(out->array_type, &out->items.emplace_back(), /*allow_array=*/false)) return false;
    }
    return true;
  }

  ByteReader reader_;
  std::uint64_t items_ = 0;  // array items read so far, all arrays
};

Status ParseMetadata(Parser& p, std::uint64_t count, GgufFile& file) {
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string key;
    std::uint32_t type = 0;
    GgufValue value;
    if (!p.String(&key) || !p.U32(&type) ||
        !p.Value(static_cast<GgufValueType>(type), &value, /*allow_array=*/true)) {
      return Malformed("truncated or invalid metadata entry " + std::to_string(i) +
                       (key.empty() ? "" : " (" + key + ")") + " at byte " +
                       std::to_string(p.offset()));
    }
    file.metadata.emplace_back(std::move(key), std::move(value));
  }
  return Status::Ok();
}

Status ParseTensorInfo(Parser& p, std::uint64_t index, GgufTensorInfo& tensor) {
  std::uint32_t dims = 0;
  std::uint32_t type = 0;
  std::string where = "tensor info " + std::to_string(index);
  if (!p.String(&tensor.name) || !p.U32(&dims) || dims == 0 || dims > 4) {
    return Malformed("truncated or invalid " + where);
  }
  where += " (" + tensor.name + ")";
  tensor.ne.resize(dims);
  std::uint64_t elements = 1;
  bool overflows = false;
  for (std::uint64_t& n : tensor.ne) {
    if (!p.U64(&n)) return Malformed("truncated in " + where);
    overflows = overflows || __builtin_mul_overflow(elements, n, &elements);
  }
  // No element type takes more than 4 bytes, so this bound keeps its byte count in range.
  if (overflows || elements > kMaxTensorElements) {
    return Malformed(where + ": element count overflows");
  }
  if (!p.U32(&type) || !p.U64(&tensor.offset)) return Malformed("truncated in " + where);
  tensor.type = static_cast<GgmlType>(type);
  std::optional<std::uint64_t> bytes = TensorDataBytes(type, elements);
  if (!bytes) return Malformed(where + ": unsupported type " + std::to_string(type));
  tensor.bytes = *bytes;
  if (tensor.offset % kGgufAlignment != 0) return Malformed(where + ": unaligned offset");
  return Status::Ok();
}

}  // namespace

const GgufValue* GgufFile::Find(std::string_view key) const {
  for (const auto& [name, value] : metadata) {
    if (name == key) return &value;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  for (const GgufTensorInfo& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

Result<GgufFile> ParseGguf(std::string_view bytes) {
  if (!bytes.starts_with(kGgufMagic)) return Malformed("not a GGUF file (bad magic)");
  Parser p(bytes.substr(kGgufMagic.size()));
  GgufFile file;
  std::uint64_t tensor_count = 0;
  std::uint64_t kv_count = 0;
  if (!p.U32(&file.version) || !p.U64(&tensor_count) || !p.U64(&kv_count)) {
    return Malformed("truncated header");
  }
  if (file.version != kGgufVersion) {
    return Malformed("version " + std::to_string(file.version) + ", expected 3");
  }
  std::uint64_t left = bytes.size() - kGgufMagic.size() - p.offset();
  if (tensor_count > left / kMinTensorInfoBytes || kv_count > left / kMinMetadataEntryBytes) {
    return Malformed("implausible counts: " + std::to_string(tensor_count) + " tensors and " +
                     std::to_string(kv_count) + " metadata entries in " + std::to_string(left) +
                     " bytes");
  }
  ORCH_RETURN_IF_ERROR(ParseMetadata(p, kv_count, file));
  file.tensors.resize(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    ORCH_RETURN_IF_ERROR(ParseTensorInfo(p, i, file.tensors[i]));
  }
  const GgufValue* alignment = file.Find("general.alignment");
  if (alignment != nullptr && alignment->integer != kGgufAlignment) {
    return Malformed("general.alignment " + std::to_string(alignment->integer) +
                     ", only 32 is supported");
  }
  file.data_offset = AlignUp(kGgufMagic.size() + p.offset());
  std::uint64_t data_bytes = bytes.size() > file.data_offset ? bytes.size() - file.data_offset : 0;
  for (const GgufTensorInfo& tensor : file.tensors) {
    if (tensor.offset > data_bytes || tensor.bytes > data_bytes - tensor.offset) {
      return Malformed("tensor " + tensor.name + " extends past the end of the file");
    }
  }
  return file;
}

}  // namespace orch::model
