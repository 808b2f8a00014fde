// digest_chunk_fuzzer: one input is one frame; its seeds are DigestChunk frames
// (fuzz/corpus/digest_chunk_fuzzer/, one of them of protocol version 1).
// protocol::Decode must decode it or refuse it with a Status, never reading out
// of bounds nor allocating for records the frame cannot hold: a decoded
// DigestChunk has at most one record per kMinChunkRecordBytes of the frame, and
// survives Encode/Decode unchanged. message_fuzzer covers every message kind
// but also hands each frame to a coordinator, so it runs far fewer inputs a
// second on the records' list.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "fuzz/fuzz_check.h"
#include "protocol/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace protocol = orch::protocol;
  std::string frame(reinterpret_cast<const char*>(data), size);
  orch::Result<protocol::Message> message = protocol::Decode(frame);
  if (!message.ok()) return 0;
  const auto* chunk = std::get_if<protocol::DigestChunk>(&*message);
  if (chunk == nullptr) return 0;
  FUZZ_EXPECT(chunk->records.size() <= size / protocol::kMinChunkRecordBytes);
  orch::Result<protocol::Message> again = protocol::Decode(protocol::Encode(*message));
  FUZZ_EXPECT(again.ok());
  FUZZ_EXPECT(*again == *message);
  return 0;
}
