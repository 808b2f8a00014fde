// The trained model committed under examples/models (docs/models.md, "The trained
// model"): the files are the pinned ones, orch's GGUF reader reads them as the llama
// architecture with the trainer's dimensions and tokenizer, and the f16 file is the f32
// file rounded by orch's own float16 conversion. The real-engine checks are in
// tests/drivers/llamacpp/trained_model_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "base/sha256.h"
#include "model/gguf_reader.h"
#include "model/half_float.h"

namespace orch::model {
namespace {

// Pinned: retraining (scripts/train-tiny-model) changes these, deliberately.
constexpr std::string_view kF32Sha256 =
    "2edb568f0c7576b5b0b77ab7223bf1eb53c47639d55fd53ab4ddbc35b48a7710";
constexpr std::string_view kF16Sha256 =
    "a5d7a03eb7bda55201f551085dcb4ebd26d8b0deda27a9fe2fda9af0bb596430";

constexpr std::int64_t kVocab = 2048;
constexpr std::int64_t kEmbd = 256;
constexpr std::int64_t kLayers = 2;
constexpr std::int64_t kHeads = 4;
constexpr std::int64_t kKvHeads = 2;
constexpr std::int64_t kFf = 384;
constexpr std::int64_t kCtx = 256;

std::string ModelsDir() { return std::string(ORCH_SOURCE_DIR) + "/examples/models/"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TrainedModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    f32_bytes_ = new std::string(Slurp(ModelsDir() + "kjv-tiny-f32.gguf"));
    f16_bytes_ = new std::string(Slurp(ModelsDir() + "kjv-tiny-f16.gguf"));
  }
  static void TearDownTestSuite() {
    delete f32_bytes_;
    delete f16_bytes_;
  }
  static GgufFile Parse(const std::string& bytes) {
    Result<GgufFile> file = ParseGguf(bytes);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? *file : GgufFile{};
  }

  static std::string* f32_bytes_;
  static std::string* f16_bytes_;
};

std::string* TrainedModelTest::f32_bytes_ = nullptr;
std::string* TrainedModelTest::f16_bytes_ = nullptr;

std::int64_t Integer(const GgufFile& file, std::string_view key) {
  const GgufValue* value = file.Find(key);
  EXPECT_NE(value, nullptr) << key;
  return value == nullptr ? -1 : value->integer;
}

std::string Text(const GgufFile& file, std::string_view key) {
  const GgufValue* value = file.Find(key);
  EXPECT_NE(value, nullptr) << key;
  return value == nullptr ? "" : value->text;
}

TEST_F(TrainedModelTest, FilesAreThePinnedOnesAndSha256SumsListsThem) {
  EXPECT_EQ(Sha256Hex(*f32_bytes_), kF32Sha256);
  EXPECT_EQ(Sha256Hex(*f16_bytes_), kF16Sha256);
  std::string sums = Slurp(ModelsDir() + "SHA256SUMS");
  EXPECT_THAT(sums, ::testing::HasSubstr(std::string(kF32Sha256) + "  kjv-tiny-f32.gguf\n"));
  EXPECT_THAT(sums, ::testing::HasSubstr(std::string(kF16Sha256) + "  kjv-tiny-f16.gguf\n"));
}

TEST_F(TrainedModelTest, ReadsAsALlamaModelWithTheTrainersDimensions) {
  for (const std::string* bytes : {f32_bytes_, f16_bytes_}) {
    GgufFile file = Parse(*bytes);
    EXPECT_EQ(file.version, 3u);
    EXPECT_EQ(Text(file, "general.architecture"), "llama");
    EXPECT_EQ(Text(file, "general.name"), "orch kjv-tiny");
    EXPECT_THAT(Text(file, "orch.trained.recipe"),
                ::testing::StartsWith("scripts/train-tiny-model --vocab 2048 "));
    EXPECT_THAT(Text(file, "orch.trained.corpus"),
                ::testing::HasSubstr("King James Bible (public domain), Debian bible-kjv-text"));
    EXPECT_EQ(file.Find("orch.synth.recipe"), nullptr);
    EXPECT_EQ(Integer(file, "llama.vocab_size"), kVocab);
    EXPECT_EQ(Integer(file, "llama.context_length"), kCtx);
    EXPECT_EQ(Integer(file, "llama.embedding_length"), kEmbd);
    EXPECT_EQ(Integer(file, "llama.block_count"), kLayers);
    EXPECT_EQ(Integer(file, "llama.feed_forward_length"), kFf);
    EXPECT_EQ(Integer(file, "llama.attention.head_count"), kHeads);
    EXPECT_EQ(Integer(file, "llama.attention.head_count_kv"), kKvHeads);
    // head_dim 64: llama.cpp's KV rotation path.
    EXPECT_EQ(Integer(file, "llama.rope.dimension_count"), 64);
    EXPECT_EQ(file.Find("llama.rope.freq_base")->real, 10000.0);
    EXPECT_EQ(Integer(file, "general.alignment"), 32);
  }
  EXPECT_EQ(Integer(Parse(*f32_bytes_), "general.file_type"), 0);
  EXPECT_EQ(Integer(Parse(*f16_bytes_), "general.file_type"), 1);
}

TEST_F(TrainedModelTest, HasEveryLlamaTensorWithTheOutputTiedToTheEmbedding) {
  using Ne = std::vector<std::uint64_t>;
  GgufFile f32 = Parse(*f32_bytes_);
  GgufFile f16 = Parse(*f16_bytes_);
  ASSERT_EQ(f32.tensors.size(), 2u + 9u * kLayers);
  ASSERT_EQ(f16.tensors.size(), f32.tensors.size());
  EXPECT_EQ(f32.FindTensor("output.weight"), nullptr);  // llama.cpp reuses token_embd
  ASSERT_NE(f32.FindTensor("token_embd.weight"), nullptr);
  EXPECT_EQ(f32.FindTensor("token_embd.weight")->ne, (Ne{256, 2048}));
  EXPECT_EQ(f32.FindTensor("blk.1.attn_q.weight")->ne, (Ne{256, 256}));
  EXPECT_EQ(f32.FindTensor("blk.1.attn_k.weight")->ne, (Ne{256, 128}));
  EXPECT_EQ(f32.FindTensor("blk.1.attn_v.weight")->ne, (Ne{256, 128}));
  EXPECT_EQ(f32.FindTensor("blk.1.ffn_down.weight")->ne, (Ne{384, 256}));
  EXPECT_EQ(f32.FindTensor("output_norm.weight")->ne, (Ne{256}));
  std::uint64_t parameters = 0;
  for (std::size_t i = 0; i < f32.tensors.size(); ++i) {
    const GgufTensorInfo& a = f32.tensors[i];
    const GgufTensorInfo& b = f16.tensors[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.ne, b.ne) << a.name;
    EXPECT_EQ(a.type, GgmlType::kF32) << a.name;
    EXPECT_EQ(b.type, a.ne.size() == 1 ? GgmlType::kF32 : GgmlType::kF16) << b.name;
    std::uint64_t n = 1;
    for (std::uint64_t d : a.ne) n *= d;
    parameters += n;
  }
  EXPECT_EQ(parameters, 1508608u);
}

TEST_F(TrainedModelTest, F16FileIsTheF32FileRoundedToNearestEven) {
  GgufFile f32 = Parse(*f32_bytes_);
  GgufFile f16 = Parse(*f16_bytes_);
  ASSERT_EQ(f32.tensors.size(), f16.tensors.size());
  for (std::size_t i = 0; i < f32.tensors.size(); ++i) {
    const GgufTensorInfo& a = f32.tensors[i];
    const GgufTensorInfo& b = f16.tensors[i];
    const char* src = f32_bytes_->data() + f32.data_offset + a.offset;
    const char* dst = f16_bytes_->data() + f16.data_offset + b.offset;
    std::size_t mismatches = 0;
    for (std::uint64_t j = 0; j < a.bytes / 4; ++j) {
      float value;
      std::memcpy(&value, src + 4 * j, 4);
      if (b.type == GgmlType::kF32) {
        mismatches += std::memcmp(src + 4 * j, dst + 4 * j, 4) != 0;
        continue;
      }
      std::uint16_t half;
      std::memcpy(&half, dst + 2 * j, 2);
      mismatches += half != F32ToF16Bits(value);
    }
    EXPECT_EQ(mismatches, 0u) << a.name;
  }
}

TEST_F(TrainedModelTest, CarriesTheByteLevelBpeTokenizerLlamaCppLoadsAsGpt2) {
  GgufFile file = Parse(*f32_bytes_);
  EXPECT_EQ(Text(file, "tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(Text(file, "tokenizer.ggml.pre"), "gpt-2");
  const GgufValue* tokens = file.Find("tokenizer.ggml.tokens");
  const GgufValue* types = file.Find("tokenizer.ggml.token_type");
  const GgufValue* merges = file.Find("tokenizer.ggml.merges");
  ASSERT_TRUE(tokens && types && merges);
  ASSERT_EQ(tokens->items.size(), static_cast<std::size_t>(kVocab));
  ASSERT_EQ(types->items.size(), static_cast<std::size_t>(kVocab));
  // One merge per token between the 256 byte tokens and the 4 control tokens, in order:
  // merge i "A B" makes token 256 + i, "AB".
  ASSERT_EQ(merges->items.size(), static_cast<std::size_t>(kVocab - 256 - 4));
  for (std::size_t i = 0; i < merges->items.size(); ++i) {
    std::string merge = merges->items[i].text;
    std::size_t space = merge.find(' ');
    ASSERT_NE(space, std::string::npos) << merge;
    merge.erase(space, 1);
    EXPECT_EQ(merge, tokens->items[256 + i].text) << i;
  }
  EXPECT_EQ(tokens->items[32].text, "\xc4\xa0");  // GPT-2's stand-in for ' '
  EXPECT_EQ(tokens->items[10].text, "\xc4\x8a");  // ... and for '\n'
  EXPECT_EQ(Integer(file, "tokenizer.ggml.bos_token_id"), kVocab - 4);
  EXPECT_EQ(Integer(file, "tokenizer.ggml.eos_token_id"), kVocab - 3);
  EXPECT_EQ(Integer(file, "tokenizer.ggml.padding_token_id"), kVocab - 2);
  EXPECT_EQ(Integer(file, "tokenizer.ggml.unknown_token_id"), kVocab - 1);
  EXPECT_EQ(tokens->items[kVocab - 4].text, "<|begin_of_text|>");
  for (std::int64_t i = 0; i < kVocab; ++i)
    EXPECT_EQ(types->items[i].integer, i >= kVocab - 4 ? 3 : 1) << i;
  EXPECT_EQ(Integer(file, "tokenizer.ggml.add_bos_token"), 1);
  EXPECT_EQ(Integer(file, "tokenizer.ggml.add_eos_token"), 0);
  // Trained on the King James text: its most common words are single tokens.
  std::vector<std::string> spellings;
  for (const GgufValue& token : tokens->items) spellings.push_back(token.text);
  for (const char* word : {"\xc4\xa0"
                           "the",
                           "\xc4\xa0"
                           "and",
                           "\xc4\xa0"
                           "LORD",
                           "\xc4\xa0"
                           "unto"})
    EXPECT_THAT(spellings, ::testing::Contains(std::string(word)));
}

}  // namespace
}  // namespace orch::model
