// Frames as a peer of protocol version 1 sent them, byte for byte, for tests of
// what such a peer gets from this build. Version 1 framed a DigestChunk's
// records by hand in one Data field (orch.capnp, DigestChunk.recordsV1): a u32
// record count, then per record a u64 position, a u32 length and the bytes,
// little-endian. No encoder of this build writes these frames.
#pragma once

#include <string>

namespace orch::protocol::testing {

// Envelope{digestChunk: runId "run-1", seq 3, records {0, "abc"}, {1, "de"}}.
inline std::string Version1DigestChunkFrame() {
  static constexpr char kFrame[] =
      "\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01\x00"
      "\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x02\x00"
      "\x03\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x32\x00\x00\x00"
      "\x05\x00\x00\x00\x0a\x01\x00\x00\x72\x75\x6e\x2d\x31\x00\x00\x00"
      "\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00"
      "\x61\x62\x63\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x64"
      "\x65\x00\x00\x00\x00\x00\x00\x00";
  return std::string(kFrame, sizeof(kFrame) - 1);
}

}  // namespace orch::protocol::testing
