#include "model/synth_model.h"

#include <cmath>
#include <cstring>

#include "base/bytes.h"
#include "base/sha256.h"
#include "model/byte_bpe_vocab.h"
#include "model/free_space.h"
#include "model/half_float.h"
#include "model/split_mix64.h"

namespace orch::model {
namespace {

constexpr std::size_t kChunkBytes = 1 << 20;
constexpr float kRmsEpsilon = 1e-5f;
constexpr float kRopeFreqBase = 10000.0f;

GgmlType WeightType(const SynthRecipe& recipe) {
  if (recipe.type == "f16") return GgmlType::kF16;
  if (recipe.type == "bf16") return GgmlType::kBF16;
  return GgmlType::kF32;
}

// llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_BF16 32.
std::uint32_t FileType(GgmlType type) {
  switch (type) {
    case GgmlType::kF16:
      return 1;
    case GgmlType::kBF16:
      return 32;
    default:
      return 0;
  }
}

std::uint32_t U32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

void AddModelMetadata(GgufWriter& w, const SynthRecipe& r) {
  w.AddString("general.architecture", "llama");
  w.AddString("general.name", "orch synth " + CanonicalRecipe(r));
  w.AddU32("general.file_type", FileType(WeightType(r)));
  w.AddString("orch.synth.recipe", CanonicalRecipe(r));
  w.AddU32("llama.vocab_size", U32(r.vocab));
  w.AddU32("llama.context_length", U32(r.ctx));
  w.AddU32("llama.embedding_length", U32(r.embd));
  w.AddU32("llama.block_count", U32(r.layers));
  w.AddU32("llama.feed_forward_length", U32(r.ff));
  w.AddU32("llama.attention.head_count", U32(r.heads));
  w.AddU32("llama.attention.head_count_kv", U32(r.kv_heads));
  w.AddF32("llama.attention.layer_norm_rms_epsilon", kRmsEpsilon);
  w.AddU32("llama.rope.dimension_count", U32(r.embd / r.heads));
  w.AddF32("llama.rope.freq_base", kRopeFreqBase);
}

void AddTokenizerMetadata(GgufWriter& w, const SynthRecipe& r) {
  ByteBpeVocab vocab = BuildByteBpeVocab(r.vocab);
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", "gpt-2");
  w.AddStringArray("tokenizer.ggml.tokens", vocab.tokens);
  w.AddI32Array("tokenizer.ggml.token_type", vocab.token_types);
  w.AddStringArray("tokenizer.ggml.merges", vocab.merges);
  w.AddU32("tokenizer.ggml.bos_token_id", vocab.bos);
  w.AddU32("tokenizer.ggml.eos_token_id", vocab.eos);
  w.AddU32("tokenizer.ggml.padding_token_id", vocab.pad);
  w.AddU32("tokenizer.ggml.unknown_token_id", vocab.unk);
  w.AddBool("tokenizer.ggml.add_bos_token", true);
  w.AddBool("tokenizer.ggml.add_eos_token", false);
  if (r.chat == "chatml") w.AddString("tokenizer.chat_template", kChatMlTemplate);
}

void AddTensors(GgufWriter& w, const SynthRecipe& r) {
  auto embd = static_cast<std::uint64_t>(r.embd);
  auto vocab = static_cast<std::uint64_t>(r.vocab);
  auto ff = static_cast<std::uint64_t>(r.ff);
  std::uint64_t kv =
      embd / static_cast<std::uint64_t>(r.heads) * static_cast<std::uint64_t>(r.kv_heads);
  GgmlType type = WeightType(r);
  w.AddTensor("token_embd.weight", {embd, vocab}, type);
  for (std::int64_t layer = 0; layer < r.layers; ++layer) {
    std::string blk = "blk." + std::to_string(layer) + ".";
    w.AddTensor(blk + "attn_norm.weight", {embd}, GgmlType::kF32);
    w.AddTensor(blk + "attn_q.weight", {embd, embd}, type);
    w.AddTensor(blk + "attn_k.weight", {embd, kv}, type);
    w.AddTensor(blk + "attn_v.weight", {embd, kv}, type);
    w.AddTensor(blk + "attn_output.weight", {embd, embd}, type);
    w.AddTensor(blk + "ffn_norm.weight", {embd}, GgmlType::kF32);
    w.AddTensor(blk + "ffn_gate.weight", {embd, ff}, type);
    w.AddTensor(blk + "ffn_up.weight", {embd, ff}, type);
    w.AddTensor(blk + "ffn_down.weight", {ff, embd}, type);
  }
  w.AddTensor("output_norm.weight", {embd}, GgmlType::kF32);
  w.AddTensor("output.weight", {embd, vocab}, type);
}

std::uint64_t Fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void AppendValue(std::string& out, GgmlType type, float value) {
  switch (type) {
    case GgmlType::kF16:
      AppendLittleEndian(out, F32ToF16Bits(value));
      return;
    case GgmlType::kBF16:
      AppendLittleEndian(out, F32ToBf16Bits(value));
      return;
    default:
      AppendF32(out, value);
  }
}

// Streams one tensor's data (without padding) through `buffer`, flushing whole chunks.
Status StreamTensor(const GgufTensorInfo& tensor, std::int64_t seed, std::string& buffer,
                    ByteSink& sink) {
  std::uint64_t elements = 1;
  for (std::uint64_t n : tensor.ne) elements *= n;
  bool norm = tensor.ne.size() == 1;
  SplitMix64 random(Fnv1a64(tensor.name) ^ static_cast<std::uint64_t>(seed));
  // 2^-23 / sqrt(row length): scales NextSigned24() to [-1, 1) / sqrt(row length).
  float scale = (1.0f / std::sqrt(static_cast<float>(tensor.ne[0]))) * 0x1p-23f;
  for (std::uint64_t i = 0; i < elements; ++i) {
    float value = norm ? 1.0f : static_cast<float>(random.NextSigned24()) * scale;
    AppendValue(buffer, tensor.type, value);
    if (buffer.size() >= kChunkBytes) {
      ORCH_RETURN_IF_ERROR(sink.Append(buffer));
      buffer.clear();
    }
  }
  return Status::Ok();
}

}  // namespace

GgufWriter SynthModelLayout(const SynthRecipe& recipe) {
  GgufWriter writer;
  AddModelMetadata(writer, recipe);
  AddTokenizerMetadata(writer, recipe);
  AddTensors(writer, recipe);
  return writer;
}

std::uint64_t SynthModelBytes(const SynthRecipe& recipe) {
  return SynthModelLayout(recipe).FileBytes();
}

Status CheckSynthModelSize(const SynthRecipe& recipe, std::uint64_t max_bytes,
                           std::string_view cap_name) {
  std::uint64_t bytes = SynthModelBytes(recipe);
  if (bytes <= max_bytes) return Status::Ok();
  return InvalidArgument("synth recipe " + CanonicalRecipe(recipe) + " makes a GGUF of " +
                         DescribeBytes(bytes) + ", over the cap of " + DescribeBytes(max_bytes) +
                         " (" + std::string(cap_name) + "); make the recipe smaller or raise " +
                         std::string(cap_name));
}

Status StreamSynthModel(const SynthRecipe& recipe, ByteSink& sink) {
  GgufWriter writer = SynthModelLayout(recipe);
  ORCH_RETURN_IF_ERROR(sink.Append(writer.Header()));
  std::string buffer;
  buffer.reserve(kChunkBytes + 8);
  for (std::size_t i = 0; i < writer.tensors().size(); ++i) {
    ORCH_RETURN_IF_ERROR(StreamTensor(writer.tensors()[i], recipe.seed, buffer, sink));
    buffer.append(writer.PaddingAfter(i), '\0');
  }
  return sink.Append(buffer);
}

Result<FileDigest> WriteSynthModelHashed(const SynthRecipe& recipe, const std::string& path) {
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  ORCH_RETURN_IF_ERROR(StreamSynthModel(recipe, *file));
  return file->Commit();
}

Status WriteSynthModel(const SynthRecipe& recipe, const std::string& path) {
  return WriteSynthModelHashed(recipe, path).status();
}

std::string SynthModelFileName(const SynthRecipe& recipe) {
  return "synth-" + Sha256Hex(CanonicalRecipe(recipe)).substr(0, 16) + ".gguf";
}

}  // namespace orch::model
