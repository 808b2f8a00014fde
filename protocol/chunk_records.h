// The framing of DigestChunk::records: a sequence of (position, bytes) records.
//
// Layout (little-endian): u32 record count, then per record u64 position, u32 length,
// `length` bytes. The bytes are opaque here (digest/record_codec.h gives them meaning);
// the coordinator needs only the positions to store each record under its run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::protocol {

struct ChunkRecord {
  std::uint64_t position = 0;
  std::string bytes;
  friend bool operator==(const ChunkRecord&, const ChunkRecord&) = default;
};

std::string EncodeChunkRecords(const std::vector<ChunkRecord>& records);

// DataLoss naming the record index and what was wrong for truncated input, lengths past
// the end, counts that cannot fit, or trailing bytes. Never reads out of bounds.
Result<std::vector<ChunkRecord>> DecodeChunkRecords(std::string_view bytes);

}  // namespace orch::protocol
