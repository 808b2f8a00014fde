// The GGUF writer and reader against each other, plus byte-level checks of the layout.
#include <gtest/gtest.h>

#include "base/bytes.h"
#include "model/gguf_reader.h"
#include "model/gguf_writer.h"

namespace orch::model {
namespace {

// A complete file: the header, then each tensor's data (bytes of value i+1) and padding.
std::string FileOf(const GgufWriter& writer) {
  std::string out = writer.Header();
  for (std::size_t i = 0; i < writer.tensors().size(); ++i) {
    out.append(writer.tensors()[i].bytes, static_cast<char>(i + 1));
    out.append(writer.PaddingAfter(i), '\0');
  }
  return out;
}

GgufWriter Sample() {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddU32("llama.block_count", 4);
  w.AddI32("test.negative", -7);
  w.AddF32("test.eps", 1e-5f);
  w.AddBool("test.flag", true);
  w.AddStringArray("tokenizer.ggml.tokens", {"a", "Ġthe", ""});
  w.AddI32Array("tokenizer.ggml.token_type", {1, 3});
  w.AddF32Array("test.scores", {0.5f, -1.0f});
  w.AddTensor("token_embd.weight", {3, 5}, GgmlType::kF32);  // 60 bytes
  w.AddTensor("norm.weight", {7}, GgmlType::kF16);           // 14 bytes
  w.AddTensor("out.weight", {2, 2}, GgmlType::kBF16);        // 8 bytes
  return w;
}

TEST(GgufTest, HeaderStartsWithMagicVersionAndCounts) {
  std::string header = Sample().Header();
  ByteReader reader(header);
  std::string_view magic;
  std::uint32_t version = 0;
  std::uint64_t tensors = 0;
  std::uint64_t kvs = 0;
  ASSERT_TRUE(reader.ReadBytes(4, &magic) && reader.ReadU32(&version) && reader.ReadU64(&tensors) &&
              reader.ReadU64(&kvs));
  EXPECT_EQ(magic, "GGUF");
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(tensors, 3u);
  EXPECT_EQ(kvs, 9u);  // 8 keys plus general.alignment
  EXPECT_EQ(header.size() % 32, 0u);
}

TEST(GgufTest, ReaderReturnsWhatTheWriterWrote) {
  std::string file = FileOf(Sample());
  Result<GgufFile> parsed = ParseGguf(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->Find("general.architecture")->text, "llama");
  EXPECT_EQ(parsed->Find("llama.block_count")->type, GgufValueType::kU32);
  EXPECT_EQ(parsed->Find("llama.block_count")->integer, 4);
  EXPECT_EQ(parsed->Find("test.negative")->integer, -7);
  EXPECT_FLOAT_EQ(static_cast<float>(parsed->Find("test.eps")->real), 1e-5f);
  EXPECT_EQ(parsed->Find("test.flag")->integer, 1);
  const GgufValue* tokens = parsed->Find("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens->items.size(), 3u);
  EXPECT_EQ(tokens->array_type, GgufValueType::kString);
  EXPECT_EQ(tokens->items[1].text, "Ġthe");
  EXPECT_EQ(parsed->Find("tokenizer.ggml.token_type")->items[1].integer, 3);
  EXPECT_EQ(parsed->Find("test.scores")->items[1].real, -1.0);
  EXPECT_EQ(parsed->Find("general.alignment")->integer, 32);
  EXPECT_EQ(parsed->metadata.back().first, "general.alignment");
}

TEST(GgufTest, TensorsAreAlignedAndPaddedTo32Bytes) {
  GgufWriter writer = Sample();
  std::string file = FileOf(writer);
  Result<GgufFile> parsed = ParseGguf(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->tensors.size(), 3u);
  const GgufTensorInfo& embd = parsed->tensors[0];
  EXPECT_EQ(embd.name, "token_embd.weight");
  EXPECT_EQ(embd.ne, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(embd.type, GgmlType::kF32);
  EXPECT_EQ(embd.offset, 0u);
  EXPECT_EQ(parsed->tensors[1].offset, 64u);  // 60 bytes padded to 64
  EXPECT_EQ(parsed->tensors[1].type, GgmlType::kF16);
  EXPECT_EQ(parsed->tensors[2].offset, 96u);  // 14 bytes padded to 32
  EXPECT_EQ(parsed->tensors[2].type, GgmlType::kBF16);
  EXPECT_EQ(parsed->data_offset, writer.Header().size());
  EXPECT_EQ(file.size(), writer.FileBytes());
  EXPECT_EQ(file.size(), parsed->data_offset + 128);
  EXPECT_EQ(file[parsed->data_offset + 64], 2);  // the second tensor's first byte
  EXPECT_EQ(writer.PaddingAfter(0), 4u);
}

TEST(GgufTest, ReaderRejectsMalformedFiles) {
  std::string file = FileOf(Sample());
  EXPECT_EQ(ParseGguf("GGML" + file.substr(4)).status().message(),
            "gguf: not a GGUF file (bad magic)");
  std::string v2 = file;
  v2[4] = 2;
  EXPECT_EQ(ParseGguf(v2).status().message(), "gguf: version 2, expected 3");
  EXPECT_EQ(ParseGguf(file.substr(0, 40)).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseGguf(file.substr(0, file.size() - 40)).status().message(),
            "gguf: tensor out.weight extends past the end of the file");
}

// Regression: the element count (product of ne) and its size in bytes wrapped around
// 2^64, so a tensor of 2^64 or 2^62 f32 values was read as 0 bytes inside the file.
TEST(GgufTest, ReaderRejectsTensorsWhoseSizeOverflows) {
  for (std::vector<std::uint64_t> ne :
       {std::vector<std::uint64_t>{1ull << 32, 1ull << 32}, {1ull << 62, 1}}) {
    GgufWriter w;
    w.AddTensor("huge.weight", ne, GgmlType::kF32);
    Result<GgufFile> parsed = ParseGguf(w.Header());
    EXPECT_EQ(parsed.status().message(),
              "gguf: tensor info 0 (huge.weight): element count overflows");
  }
}

// The bytes of a GGUF header: magic, version 3, the counts, then `rest`.
std::string HeaderOf(std::uint64_t tensors, std::uint64_t entries, const std::string& rest) {
  std::string out = "GGUF";
  auto put = [&out](std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  };
  put(3, 4);
  put(tensors, 8);
  put(entries, 8);
  return out + rest;
}

// Regression: a count was checked only against the file's size in bytes, and the reader
// made room for that many parsed entries (about 80 bytes each) before reading any.
TEST(GgufTest, ReaderRefusesCountsTheFileCannotHold) {
  Result<GgufFile> parsed = ParseGguf(HeaderOf(1000, 0, std::string(4096, '\0')));
  EXPECT_EQ(parsed.status().message(),
            "gguf: implausible counts: 1000 tensors and 0 metadata entries in 4096 bytes");
  parsed = ParseGguf(HeaderOf(0, 400, std::string(4096, '\0')));
  EXPECT_EQ(parsed.status().message(),
            "gguf: implausible counts: 0 tensors and 400 metadata entries in 4096 bytes");
}

// Regression: arrays could declare up to 2^28 items (about 22 GB parsed) as long as the
// file had as many bytes; now all arrays of a file hold at most 2^22 items together.
TEST(GgufTest, ReaderRefusesArraysBeyondTheItemBudget) {
  auto u8_array = [](std::uint64_t count) {
    std::string entry("\1\0\0\0\0\0\0\0k\x09\0\0\0\0\0\0\0", 17);  // key "k", array of u8
    for (int i = 0; i < 8; ++i) entry.push_back(static_cast<char>((count >> (8 * i)) & 0xff));
    return entry + std::string(count, '\0');
  };
  Result<GgufFile> under = ParseGguf(HeaderOf(0, 1, u8_array(1 << 16)));
  ASSERT_TRUE(under.ok()) << under.status().message();
  EXPECT_EQ(under->metadata.at(0).second.items.size(), 1u << 16);
  Result<GgufFile> over = ParseGguf(HeaderOf(0, 1, u8_array((1 << 22) + 1)));
  EXPECT_EQ(over.status().message(), "gguf: truncated or invalid metadata entry 0 (k) at byte 45");
}

TEST(GgufTest, TensorDataBytesKnowsBlockQuantizedTypes) {
  EXPECT_EQ(TensorDataBytes(0, 10), 40u);
  EXPECT_EQ(TensorDataBytes(30, 10), 20u);
  EXPECT_EQ(TensorDataBytes(2, 64), 36u);  // q4_0: 2 blocks of 18 bytes
  EXPECT_EQ(TensorDataBytes(8, 64), 68u);  // q8_0: 2 blocks of 34 bytes
  EXPECT_EQ(TensorDataBytes(8, 33), std::nullopt);
  EXPECT_EQ(TensorDataBytes(12, 256), std::nullopt);  // q4_K: not known here
}

}  // namespace
}  // namespace orch::model
