// The one pass over a logit row behind DigestRowInto (row_digest.h): hash,
// NaN scan, top-k and the online logsumexp/entropy sums, block by block; one
// pass per digest version (RunRowPass: v1, RunRowPassV2: v2).
//
// The pass is compiled for several x86-64 vector instruction sets and the
// digest uses the widest the CPU has. Every variant performs the same float
// operations on each element and sums them in the same order, so all give the
// same bits; tests run each available variant against the released digest.
#pragma once

#include <cstddef>
#include <span>

#include "digest/row_digest.h"

namespace orch::digest::internal {

enum class VectorIsa {
  kBaseline,  // SSE2: 4 floats per instruction; every x86-64 CPU, and non-x86
  kAvx2,      // 8 floats per instruction
  kAvx512,    // 16 floats per instruction
};

// Whether this CPU (and this build) can run the variant. kBaseline always can.
bool VectorIsaAvailable(VectorIsa isa);
// The widest available variant.
VectorIsa BestVectorIsa();

// What one pass over a row yields. `top` has been filled with the first
// top_count entries; statistics are meaningful only for a row whose flags come
// out 0 (no NaN, no +inf, a finite maximum).
struct RowPass {
  RowHash hash;
  bool has_nan = false;
  std::size_t top_count = 0;
  double logsumexp = 0.0;
  double entropy = 0.0;
};

// Runs the pass with `isa`, which must be available. `top` holds exactly
// min(k, row.size()) entries; `row` is non-empty.
RowPass RunRowPass(VectorIsa isa, std::span<const float> row, std::span<TokenLogit> top);

// Digest v2's pass (row_pass_v2.cc), with the same contract as RunRowPass:
// equal hash, NaN flag and top-k; logsumexp and entropy by v2's definition.
RowPass RunRowPassV2(VectorIsa isa, std::span<const float> row, std::span<TokenLogit> top);

// ComputeRowDigest (row_digest.h) with a chosen, available variant; the
// version comes from `options`.
Status ComputeRowDigestWith(VectorIsa isa, std::span<const float> row, const DigestOptions& options,
                            RowDigest* out);

}  // namespace orch::digest::internal
