#include "protocol/chunk_records.h"

#include "base/bytes.h"

namespace orch::protocol {

std::string EncodeChunkRecords(const std::vector<ChunkRecord>& records) {
  std::string out;
  AppendU32(out, static_cast<std::uint32_t>(records.size()));
  for (const ChunkRecord& r : records) {
    AppendU64(out, r.position);
    AppendU32(out, static_cast<std::uint32_t>(r.bytes.size()));
    out += r.bytes;
  }
  return out;
}

Result<std::vector<ChunkRecord>> DecodeChunkRecords(std::string_view bytes) {
  ByteReader reader(bytes);
  std::uint32_t count = 0;
  if (!reader.ReadU32(&count)) {
    return Status(StatusCode::kDataLoss, "chunk records: missing record count");
  }
  // Each record needs at least 12 bytes: a count past that is corrupt, not a reason to
  // reserve memory.
  if (count > reader.remaining() / 12) {
    return Status(StatusCode::kDataLoss, "chunk records: count " + std::to_string(count) +
                                             " does not fit in " +
                                             std::to_string(reader.remaining()) + " bytes");
  }
  std::vector<ChunkRecord> records(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t size = 0;
    std::string_view data;
    if (!reader.ReadU64(&records[i].position) || !reader.ReadU32(&size) ||
        !reader.ReadBytes(size, &data)) {
      return Status(StatusCode::kDataLoss,
                    "chunk records: record " + std::to_string(i) + " is truncated");
    }
    records[i].bytes = std::string(data);
  }
  if (reader.remaining() != 0) {
    return Status(StatusCode::kDataLoss, "chunk records: " + std::to_string(reader.remaining()) +
                                             " trailing bytes after " + std::to_string(count) +
                                             " records");
  }
  return records;
}

}  // namespace orch::protocol
