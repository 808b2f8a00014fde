// gguf_fuzzer: one input is the bytes of a GGUF file. ParseGguf
// (model/gguf_reader.h) must parse it or refuse it with a Status, never reading
// outside the bytes. For a file it accepts: each tensor's byte count is what
// its shape and type give, counted without wrap-around, and a tensor that has
// data lies inside the file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "model/gguf_reader.h"

namespace {

using orch::model::GgmlType;
using orch::model::GgufTensorInfo;
using Wide = unsigned __int128;

// The tensor's data bytes in 128-bit arithmetic (its element count then fits
// too, given the reader's bound on it); 0 for an unknown type.
Wide ExpectedBytes(const GgufTensorInfo& tensor) {
  Wide elements = 1;
  for (std::uint64_t n : tensor.ne) {
    elements *= n;
    if (elements >> 64 != 0) return ~Wide{0};  // the reader must have refused it
  }
  switch (tensor.type) {
    case GgmlType::kF32:
      return elements * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return elements * 2;
    case GgmlType::kQ4_0:
      return elements / 32 * 18;
    case GgmlType::kQ8_0:
      return elements / 32 * 34;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  orch::Result<orch::model::GgufFile> file = orch::model::ParseGguf(bytes);
  if (!file.ok()) return 0;
  for (const auto& [key, value] : file->metadata) FUZZ_EXPECT(file->Find(key) != nullptr);
  for (const GgufTensorInfo& tensor : file->tensors) {
    FUZZ_EXPECT(file->FindTensor(tensor.name) != nullptr);
    FUZZ_EXPECT(ExpectedBytes(tensor) == tensor.bytes);
    if (tensor.bytes == 0) continue;
    FUZZ_EXPECT(Wide{file->data_offset} + tensor.offset + tensor.bytes <= size);
  }
  return 0;
}
