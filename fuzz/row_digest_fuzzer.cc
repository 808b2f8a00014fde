// row_digest_fuzzer: one input is one logit row, as an engine could hand it to
// the digest (drivers call it with whatever the engine produced). Byte 0 picks
// top_k (1-32, or kMaxTopK) and how the rest reads: odd, every following
// 4 bytes are a raw float (any bit pattern: NaN payloads, infinities,
// subnormals); even, every byte is one of 16 values (NaN, +-inf, +-0, a few
// numbers that tie), so rows of ties, plateaus and non-finite runs come often.
//
// Properties, for digest v1 and v2: every instruction-set variant of the pass
// gives the same digest, bit for bit; the top-k list is the reference (non-NaN
// logits sorted by logit descending, lower id first on ties); argmax is its
// first id; the hash is the row's XXH3-128; a row with no NaN, no +inf and a
// finite maximum has finite statistics, any other row NaN ones.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "digest/row_digest.h"
#include "digest/row_pass.h"
#include "fuzz/fuzz_check.h"
#include "tests/digest/reference_top.h"

namespace {

using namespace orch::digest;
using orch::digest::testing::ReferenceTop;

constexpr std::size_t kMaxLogits = 6000;  // up to three 2,048-logit blocks

std::vector<float> RowOf(const std::uint8_t* data, std::size_t size, bool raw) {
  std::vector<float> row;
  if (raw) {
    for (std::size_t i = 0; i + 4 <= size && row.size() < kMaxLogits; i += 4) {
      float x;
      std::memcpy(&x, data + i, 4);
      row.push_back(x);
    }
    return row;
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float palette[16] = {std::numeric_limits<float>::quiet_NaN(),
                             kInf,
                             -kInf,
                             0.0f,
                             -0.0f,
                             1.0f,
                             1.0f,
                             -1.0f,
                             2.5f,
                             -3.75f,
                             10.0f,
                             -80.5f,
                             1e-40f,
                             -1e30f,
                             3.0e38f,
                             0.125f};
  for (std::size_t i = 0; i < size && row.size() < kMaxLogits; ++i) {
    row.push_back(palette[data[i] % 16]);
  }
  return row;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

bool SameDigest(const RowDigest& a, const RowDigest& b) {
  if (a.top.size() != b.top.size()) return false;
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    if (a.top[i].id != b.top[i].id || !SameBits(a.top[i].logit, b.top[i].logit)) return false;
  }
  return a.version == b.version && a.vocab_size == b.vocab_size && a.flags == b.flags &&
         a.argmax == b.argmax && SameBits(a.logsumexp, b.logsumexp) &&
         SameBits(a.entropy, b.entropy) && a.hash == b.hash && a.target_id == b.target_id &&
         SameBits(a.target_logit, b.target_logit);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace internal = orch::digest::internal;
  if (size < 2) return 0;
  const std::uint8_t mode = data[0];
  const std::vector<float> row = RowOf(data + 1, size - 1, (mode & 1) != 0);
  if (row.empty()) return 0;
  DigestOptions options;
  options.top_k = (mode >> 1) == 127 ? kMaxTopK : 1 + (mode >> 1) % 32;
  options.target_id = static_cast<std::int32_t>(mode % row.size());
  const std::vector<TokenLogit> want_top = ReferenceTop(row, options.top_k);
  for (const DigestVersion version : {DigestVersion::kV1, DigestVersion::kV2}) {
    options.version = version;
    RowDigest baseline;
    FUZZ_EXPECT(
        internal::ComputeRowDigestWith(internal::VectorIsa::kBaseline, row, options, &baseline)
            .ok());
    FUZZ_EXPECT(baseline.top.size() == want_top.size());
    for (std::size_t i = 0; i < want_top.size(); ++i) {
      FUZZ_EXPECT(baseline.top[i].id == want_top[i].id);
      FUZZ_EXPECT(SameBits(baseline.top[i].logit, want_top[i].logit));
    }
    FUZZ_EXPECT(baseline.argmax == (want_top.empty() ? -1 : want_top[0].id));
    FUZZ_EXPECT(baseline.hash == HashRow(row));
    const bool distribution = baseline.flags == 0;
    FUZZ_EXPECT(distribution == (std::isfinite(baseline.logsumexp) &&
                                 std::isfinite(baseline.entropy) && baseline.entropy >= 0.0));
    for (const internal::VectorIsa isa :
         {internal::VectorIsa::kAvx2, internal::VectorIsa::kAvx512}) {
      if (!internal::VectorIsaAvailable(isa)) continue;
      RowDigest wide;
      FUZZ_EXPECT(internal::ComputeRowDigestWith(isa, row, options, &wide).ok());
      FUZZ_EXPECT(SameDigest(wide, baseline));
    }
  }
  return 0;
}
