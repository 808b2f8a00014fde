// DigestChunk on the wire: its records are a Cap'n Proto list (protocol
// version 2). Malformed lists are built word by word, as no encoder makes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "protocol/codec.h"
#include "tests/protocol/version_1_frames.h"

namespace orch::protocol {
namespace {

using ::testing::HasSubstr;
using Word = std::uint64_t;

Result<DigestChunk> DecodeChunk(const std::string& frame) {
  Result<Message> message = Decode(frame);
  if (!message.ok()) return message.status();
  if (!std::holds_alternative<DigestChunk>(*message)) {
    return InvalidArgument(std::string("not a digestChunk: ") + MessageName(*message));
  }
  return std::get<DigestChunk>(*message);
}

// Cap'n Proto pointers (encoding spec): `offset` counts words from the end of
// the pointer.
Word StructPointer(std::uint32_t offset, std::uint16_t data_words, std::uint16_t pointers) {
  return Word{offset} << 2 | Word{data_words} << 32 | Word{pointers} << 48;
}

// element_size: 1 bit, 2 byte, 7 structs (count is then the words after the tag).
Word ListPointer(std::uint32_t offset, unsigned element_size, std::uint32_t count) {
  return 1 | Word{offset} << 2 | Word{element_size} << 32 | Word{count} << 35;
}

// The tag word before an inline-composite list: its element count and their size.
Word ListTag(std::uint32_t count, std::uint16_t data_words, std::uint16_t pointers) {
  return StructPointer(count, data_words, pointers);
}

// One segment holding `words`, little-endian, after the segment table.
std::string Frame(const std::vector<Word>& words) {
  std::vector<Word> all = {Word{words.size()} << 32};
  all.insert(all.end(), words.begin(), words.end());
  std::string out;
  for (Word w : all) {
    for (int byte = 0; byte < 8; ++byte) out.push_back(static_cast<char>(w >> (8 * byte)));
  }
  return out;
}

// Envelope{digestChunk: runId "run-1", seq 3} with `records` as its records
// pointer: an offset of 1 there points at the first word of `tail`.
std::string ChunkFrame(Word records, const std::vector<Word>& tail) {
  std::vector<Word> words = {
      StructPointer(0, 1, 1),  // root: the Envelope
      6,                       // Envelope data: which() == digestChunk
      StructPointer(0, 1, 3),  // the DigestChunk: seq; runId, recordsV1, records
      3,                       // seq
      ListPointer(2, 2, 6),    // runId: "run-1" and its NUL
      0,                       // recordsV1: null
      records,                 // records
      0x0000'0031'2d6e'7572,   // "run-1"
  };
  words.insert(words.end(), tail.begin(), tail.end());
  return Frame(words);
}

TEST(DigestChunkCodecTest, RoundTripsPositionsAndBytes) {
  DigestChunk chunk{"run-1",
                    7,
                    {{0, "a"},
                     {255, ""},
                     {65536, std::string(300, '\0')},
                     {std::uint64_t{1} << 40, std::string("\xff\x00z", 3)}}};
  Result<DigestChunk> back = DecodeChunk(Encode(chunk));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, chunk);
  DigestChunk empty{"run-1", 0, {}};
  EXPECT_EQ(*DecodeChunk(Encode(empty)), empty);
}

TEST(DigestChunkCodecTest, RoundTripsAFullChunkOfTheAgent) {
  DigestChunk chunk{"run-1", 2, {}};
  for (std::uint64_t position = 512; position < 768; ++position) {
    chunk.records.push_back({position, std::string(300, static_cast<char>(position))});
  }
  Result<DigestChunk> back = DecodeChunk(Encode(chunk));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, chunk);
}

TEST(DigestChunkCodecTest, AHandBuiltFrameDecodes) {
  // The builders below make what the encoder makes: one record {5, "abc"}.
  std::string frame =
      ChunkFrame(ListPointer(1, 7, 2), {ListTag(1, 1, 1), 5, ListPointer(0, 2, 3), 0x636261});
  Result<DigestChunk> chunk = DecodeChunk(frame);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ(*chunk, (DigestChunk{"run-1", 3, {{5, "abc"}}}));
}

TEST(DigestChunkCodecTest, RefusesAChunkOfProtocolVersion1NamingBothVersions) {
  Result<Message> decoded = Decode(testing::Version1DigestChunkFrame());
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(decoded.status().message(),
            "digestChunk.recordsV1: peer speaks protocol version 1 (records framed in one "
            "Data field), this build speaks version " +
                std::to_string(kProtocolVersion));
  EXPECT_EQ(kProtocolVersion, 2u);
}

TEST(DigestChunkCodecTest, RefusesAHelloOfProtocolVersion1NamingBothVersions) {
  Hello hello;
  hello.protocol_version = 1;
  hello.agent_id = "gpu-box-3";
  hello.capabilities.hardware_class = "cpu";
  Result<Message> decoded = Decode(Encode(hello));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(decoded.status().message(),
            "hello.protocolVersion: peer speaks protocol version 1, this build speaks version 2");
}

TEST(DigestChunkCodecTest, RefusesEveryTruncation) {
  std::string frame = Encode(DigestChunk{"run-1", 0, {{1, "abc"}, {2, "de"}}});
  for (std::size_t n = 0; n < frame.size(); ++n) {
    Result<Message> decoded = Decode(std::string_view(frame).substr(0, n));
    ASSERT_FALSE(decoded.ok()) << n;
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << n;
  }
}

TEST(DigestChunkCodecTest, HoldsAtMostOneRecordPer16BytesOfTheFrame) {
  // Records of no size cost no bytes on the wire: 10 words of frame hold at most 5.
  Result<DigestChunk> five = DecodeChunk(ChunkFrame(ListPointer(1, 7, 0), {ListTag(5, 0, 0)}));
  ASSERT_TRUE(five.ok()) << five.status().ToString();
  EXPECT_EQ(five->records, std::vector<ChunkRecord>(5));

  Result<DigestChunk> six = DecodeChunk(ChunkFrame(ListPointer(1, 7, 0), {ListTag(6, 0, 0)}));
  ASSERT_FALSE(six.ok());
  EXPECT_EQ(six.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(six.status().message(),
            "malformed frame: digestChunk.records: 6 records do not fit in a frame of 80 bytes "
            "(each takes at least 16)");

  Result<DigestChunk> million =
      DecodeChunk(ChunkFrame(ListPointer(1, 7, 0), {ListTag(1'000'000, 0, 0)}));
  ASSERT_FALSE(million.ok());
  EXPECT_THAT(million.status().message(), HasSubstr("1000000 records do not fit"));
}

TEST(DigestChunkCodecTest, RefusesAByteListAsRecordsPastTheSameLimit) {
  Result<DigestChunk> chunk = DecodeChunk(ChunkFrame(ListPointer(1, 2, 8), {~Word{0}}));
  ASSERT_FALSE(chunk.ok());
  EXPECT_THAT(chunk.status().message(), HasSubstr("8 records do not fit"));
}

TEST(DigestChunkCodecTest, RefusesMalformedListsAsDataLoss) {
  struct Case {
    const char* name;
    std::string frame;
  };
  std::vector<Case> cases = {
      {"records past the segment", ChunkFrame(ListPointer(100, 7, 2), {})},
      {"elements past the tag's word count",
       ChunkFrame(ListPointer(1, 7, 1), {ListTag(1, 1, 1), 5, 0})},
      {"a bit list as records", ChunkFrame(ListPointer(1, 1, 64), {~Word{0}})},
      {"a record's bytes past the segment",
       ChunkFrame(ListPointer(1, 7, 2), {ListTag(1, 1, 1), 5, ListPointer(0, 2, 1000)})},
      {"a record's bytes that are a struct",
       ChunkFrame(ListPointer(1, 7, 2), {ListTag(1, 1, 1), 5, StructPointer(0, 1, 0), 0})},
  };
  for (const Case& c : cases) {
    Result<Message> decoded = Decode(c.frame);
    ASSERT_FALSE(decoded.ok()) << c.name;
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << c.name;
    EXPECT_THAT(decoded.status().message(), HasSubstr("malformed frame")) << c.name;
  }
}

}  // namespace
}  // namespace orch::protocol
