// Every XXH3 variant (digest/xxh3_isa.h) gives libxxhash's XXH3_128bits for
// any length and any split of the input into updates: the row hash may not
// depend on which vector code computed it.
#include "digest/xxh3_isa.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "digest/row_pass.h"
#include "digest/row_pass_parts.h"

namespace orch::digest::internal {
namespace {

struct Variant {
  const char* name;
  VectorIsa isa;
  void (*reset)(Xxh3State*);
  void (*update)(Xxh3State*, const void*, std::size_t);
  Xxh3Hash (*digest)(const Xxh3State*);
};

std::vector<Variant> AvailableVariants() {
  std::vector<Variant> variants = {{"baseline", VectorIsa::kBaseline, Xxh3ResetBaseline,
                                    Xxh3UpdateBaseline, Xxh3DigestBaseline}};
#if ORCH_DIGEST_X86_VARIANTS
  if (VectorIsaAvailable(VectorIsa::kAvx2)) {
    variants.push_back({"avx2", VectorIsa::kAvx2, Xxh3ResetAvx2, Xxh3UpdateAvx2, Xxh3DigestAvx2});
  }
  if (VectorIsaAvailable(VectorIsa::kAvx512)) {
    variants.push_back(
        {"avx512", VectorIsa::kAvx512, Xxh3ResetAvx512, Xxh3UpdateAvx512, Xxh3DigestAvx512});
  }
#endif
  return variants;
}

std::vector<unsigned char> Bytes(std::size_t size) {
  std::vector<unsigned char> bytes(size);
  std::uint32_t state = 0x9e3779b9u;
  for (unsigned char& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(state >> 24);
  }
  return bytes;
}

Xxh3Hash Streamed(const Variant& v, const std::vector<unsigned char>& bytes, std::size_t chunk) {
  Xxh3State state;
  v.reset(&state);
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    const std::size_t n = std::min(chunk, bytes.size() - at);
    v.update(&state, bytes.data() + at, n);
  }
  return v.digest(&state);
}

TEST(Xxh3IsaTest, EveryVariantMatchesLibxxhashForEveryLengthAndSplit) {
  // Lengths around xxhash's internal edges: 16, 128 and 240 bytes (short
  // inputs), a 64-byte stripe, a 1,024-byte block, the 256-byte buffer.
  const std::size_t lengths[] = {0,   1,   3,    16,   17,   128,  129,  240,   241,   255,
                                 256, 257, 1023, 1024, 1025, 4096, 8195, 65536, 608256};
  const std::size_t chunks[] = {1, 7, 64, 100, 256, 8192, 1u << 30};
  const auto variants = AvailableVariants();
  for (const std::size_t length : lengths) {
    const auto bytes = Bytes(length);
    const XXH128_hash_t want = XXH3_128bits(bytes.data(), bytes.size());
    for (const Variant& v : variants) {
      for (const std::size_t chunk : chunks) {
        if (length > 70000 && chunk < 64) continue;  // a million one-byte updates adds nothing
        SCOPED_TRACE(std::string(v.name) + " length " + std::to_string(length) + " chunk " +
                     std::to_string(chunk));
        const Xxh3Hash got = Streamed(v, bytes, chunk);
        EXPECT_EQ(got.low, want.low64);
        EXPECT_EQ(got.high, want.high64);
      }
    }
  }
  std::printf("XXH3 variants tested here: %zu of 3\n", variants.size());
}

}  // namespace
}  // namespace orch::digest::internal
