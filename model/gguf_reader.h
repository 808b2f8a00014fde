// ParseGguf: reads back the structure of a GGUF v3 file (metadata and tensor infos) and
// checks that every tensor's data lies inside the file. orch uses it to check the files
// it generates; it does not interpret tensor data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/gguf_types.h"
#include "model/gguf_writer.h"

namespace orch::model {

// One metadata value. Scalars: integers and bool in `integer` (u64 values above INT64_MAX
// wrap), floats in `real`, strings in `text`. Arrays: `array_type` and `items`.
struct GgufValue {
  GgufValueType type = GgufValueType::kU32;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;
  GgufValueType array_type = GgufValueType::kU32;
  std::vector<GgufValue> items;
};

struct GgufFile {
  std::uint32_t version = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensorInfo> tensors;                      // in file order
  std::uint64_t data_offset = 0;  // where the data section starts in the file

  const GgufValue* Find(std::string_view key) const;
  const GgufTensorInfo* FindTensor(std::string_view name) const;
};

// Parses a whole file's bytes. Errors: kDataLoss naming what is malformed and where
// ("gguf: truncated in tensor info 3 (blk.0.attn_q.weight)").
Result<GgufFile> ParseGguf(std::string_view bytes);

}  // namespace orch::model
