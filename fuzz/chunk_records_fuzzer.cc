// chunk_records_fuzzer: one input is a DigestChunk's records field.
// DecodeChunkRecords (protocol/chunk_records.h) must decode it or refuse it
// with a Status, never reading out of bounds; the layout has one encoding, so
// what decodes encodes back to the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "protocol/chunk_records.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto records = orch::protocol::DecodeChunkRecords(bytes);
  if (!records.ok()) return 0;
  FUZZ_EXPECT(orch::protocol::EncodeChunkRecords(*records) == bytes);
  return 0;
}
