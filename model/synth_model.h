// The generated model behind a synth recipe: a deterministic llama-architecture GGUF v3
// that llama.cpp loads (docs/models.md). The same recipe gives the same bytes on every
// machine: weights come from SplitMix64 and are rounded by orch's own f16/bf16 code.
//
// Weights: each tensor has its own stream, seeded by the recipe seed and the tensor's
// name; values are uniform in [-1, 1) / sqrt(row length); norm weights are 1. Tensors of
// two dimensions have the recipe's type, norms stay f32.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "model/atomic_file.h"
#include "model/byte_sink.h"
#include "model/gguf_writer.h"
#include "model/synth_recipe.h"

namespace orch::model {

// The file's layout: metadata and tensor declarations (no data).
GgufWriter SynthModelLayout(const SynthRecipe& recipe);

// The most bytes a recipe's GGUF may have unless a larger cap is configured
// (agent.synth_max_bytes, the spec's model.synth_max_bytes): 4 GiB. The largest
// recipe key values allow files of terabytes, which would fill an agent's disk.
inline constexpr std::uint64_t kDefaultSynthMaxBytes = 4ull << 30;

// The exact size of the recipe's GGUF, computed from its layout: nothing is written.
std::uint64_t SynthModelBytes(const SynthRecipe& recipe);

// kInvalidArgument naming the canonical recipe, its size and `max_bytes` when the
// recipe's GGUF is larger than `max_bytes`; `cap_name` says where the cap is set.
Status CheckSynthModelSize(const SynthRecipe& recipe, std::uint64_t max_bytes,
                           std::string_view cap_name);

// Streams the whole file to `sink`. Memory stays bounded by one buffer (1 MiB).
Status StreamSynthModel(const SynthRecipe& recipe, ByteSink& sink);

// Writes the model to `path` atomically (see AtomicFile) and returns its SHA-256 and size,
// computed while writing. Errors: IoError naming the file.
Result<FileDigest> WriteSynthModelHashed(const SynthRecipe& recipe, const std::string& path);
Status WriteSynthModel(const SynthRecipe& recipe, const std::string& path);

// "synth-<first 16 hex digits of SHA-256 of the canonical recipe>.gguf": the name a model
// cache stores this recipe's file under.
std::string SynthModelFileName(const SynthRecipe& recipe);

}  // namespace orch::model
