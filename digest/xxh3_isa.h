// XXH3-128, streaming, compiled once per vector instruction set (xxh3_isa.inc,
// included by xxh3_baseline.cc, xxh3_avx2.cc and xxh3_avx512.cc): the row
// digest hashes each block with the xxhash vector code of the width its pass
// runs at. Every variant gives the same hash as libxxhash's XXH3_128bits; only
// the speed differs (AVX-512 hashes a row from L2 in about half the time of
// the SSE2 code).
//
// The variant sources include nothing but xxhash (all of it static there) and
// this header: a source compiled with -mavx2 or -mavx512f must define no inline
// function that another source could pick up and run on a CPU without it.
// Call an AVX2 or AVX-512 variant only where VectorIsaAvailable says so.
#pragma once

#include <cstddef>
#include <cstdint>

namespace orch::digest::internal {

// Room for an XXH3_state_t (576 bytes, 64-aligned, in xxhash 0.8); each
// variant checks that its state fits. A state is used by one variant only.
struct alignas(64) Xxh3State {
  unsigned char bytes[640];
};

struct Xxh3Hash {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
};

#define ORCH_XXH3_DECLARE(Isa)                                                \
  void Xxh3Reset##Isa(Xxh3State* state);                                      \
  void Xxh3Update##Isa(Xxh3State* state, const void* data, std::size_t size); \
  Xxh3Hash Xxh3Digest##Isa(const Xxh3State* state);

ORCH_XXH3_DECLARE(Baseline)
ORCH_XXH3_DECLARE(Avx2)
ORCH_XXH3_DECLARE(Avx512)

#undef ORCH_XXH3_DECLARE

}  // namespace orch::digest::internal
