// The digest's stability contract: on every row, every field equals the frozen
// released implementation (row_digest_reference.h) bit for bit, whichever
// vector instruction set computes it, so that digest streams recorded by
// earlier builds and on other machines stay comparable. Variants this CPU lacks
// are skipped (the baseline always runs).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "digest/row_digest.h"
#include "digest/row_pass.h"
#include "tests/digest/row_digest_reference.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

constexpr float kStabilityInf = std::numeric_limits<float>::infinity();
constexpr float kStabilityNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kMaxFloat = std::numeric_limits<float>::max();
constexpr float kTiny = std::numeric_limits<float>::denorm_min();

// Sizes around the 4- and 16-lane strides and the 2048-logit block, plus the
// two vocabularies the benchmark targets.
constexpr std::size_t kVocabSizes[] = {1,    2,    3,    4,    5,    7,     15,    16,
                                       17,   31,   33,   63,   100,  1000,  2047,  2048,
                                       2049, 4095, 4097, 6145, 8191, 32000, 32003, 152064};
constexpr std::uint32_t kTopKs[] = {1, 2, 3, 7, 20, 64, 1000, kMaxTopK};
constexpr internal::VectorIsa kIsas[] = {internal::VectorIsa::kBaseline, internal::VectorIsa::kAvx2,
                                         internal::VectorIsa::kAvx512};

// Field by field, comparing floating-point fields by their bits (NaN included)
// so that a failure names the first field that moved.
void ExpectSameBits(const RowDigest& actual, const RowDigest& expected, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(actual.vocab_size, expected.vocab_size);
  EXPECT_EQ(actual.flags, expected.flags);
  EXPECT_EQ(actual.argmax, expected.argmax);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(actual.logsumexp),
            std::bit_cast<std::uint64_t>(expected.logsumexp))
      << actual.logsumexp << " vs " << expected.logsumexp;
  EXPECT_EQ(std::bit_cast<std::uint64_t>(actual.entropy),
            std::bit_cast<std::uint64_t>(expected.entropy))
      << actual.entropy << " vs " << expected.entropy;
  EXPECT_EQ(actual.hash, expected.hash);
  EXPECT_EQ(actual.target_id, expected.target_id);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(actual.target_logit),
            std::bit_cast<std::uint32_t>(expected.target_logit));
  ASSERT_EQ(actual.top.size(), expected.top.size());
  for (std::size_t i = 0; i < actual.top.size(); ++i) {
    EXPECT_EQ(actual.top[i].id, expected.top[i].id) << "top[" << i << "]";
    EXPECT_EQ(std::bit_cast<std::uint32_t>(actual.top[i].logit),
              std::bit_cast<std::uint32_t>(expected.top[i].logit))
        << "top[" << i << "]";
  }
}

class StabilityHarness {
 public:
  explicit StabilityHarness(std::uint64_t seed) : gen_(seed) {}

  testing::RowGenerator& gen() { return gen_; }

  std::size_t Below(std::size_t n) { return static_cast<std::size_t>(gen_.Uniform() * n); }

  // Digests `row` with several k and targets, by every available variant and
  // by the public entry point, against the reference.
  void Check(const std::vector<float>& row, const std::string& kind) {
    for (const std::uint32_t k :
         {kTopKs[Below(std::size(kTopKs))], static_cast<std::uint32_t>(1 + Below(40))}) {
      const std::int32_t target =
          Below(4) == 0 ? kNoTarget : static_cast<std::int32_t>(Below(row.size()));
      const DigestOptions options{k, target, DigestVersion::kV1};
      const RowDigest expected = testing::ReferenceRowDigest(row, options);
      const std::string what = kind + " vocab " + std::to_string(row.size()) + " k " +
                               std::to_string(k) + " row #" + std::to_string(rows_++);
      RowDigest actual;
      ASSERT_TRUE(ComputeRowDigest(row, options, &actual).ok());
      ExpectSameBits(actual, expected, what);
      for (const internal::VectorIsa isa : kIsas) {
        if (!internal::VectorIsaAvailable(isa)) continue;
        ASSERT_TRUE(internal::ComputeRowDigestWith(isa, row, options, &actual).ok());
        ExpectSameBits(actual, expected, what + " isa " + std::to_string(static_cast<int>(isa)));
      }
    }
  }

  // Overwrites about `fraction` of the row's entries with `value`.
  void Sprinkle(std::vector<float>* row, double fraction, float value) {
    const std::size_t count = 1 + static_cast<std::size_t>(fraction * row->size());
    for (std::size_t i = 0; i < count; ++i) (*row)[Below(row->size())] = value;
  }

 private:
  testing::RowGenerator gen_;
  int rows_ = 0;
};

TEST(RowDigestStabilityTest, ReportsWhichVariantsThisCpuRuns) {
  for (const internal::VectorIsa isa : kIsas) {
    std::printf("vector variant %d: %s\n", static_cast<int>(isa),
                internal::VectorIsaAvailable(isa) ? "tested" : "not on this CPU");
  }
  EXPECT_TRUE(internal::VectorIsaAvailable(internal::VectorIsa::kBaseline));
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestOnGaussianAndZipfRows) {
  StabilityHarness h(101);
  for (const std::size_t vocab : kVocabSizes) {
    for (int rep = 0; rep < 3; ++rep) {
      const double sigma = std::pow(10.0, -2.0 + 4.0 * h.gen().Uniform());
      h.Check(h.gen().Row(vocab, sigma, 20.0 * h.gen().Uniform()), "gaussian");
      h.Check(h.gen().ZipfRow(vocab, 0.5 + 2.5 * h.gen().Uniform()), "zipf");
    }
  }
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestOnRandomVocabSizes) {
  StabilityHarness h(202);
  for (int rep = 0; rep < 60; ++rep) {
    const std::size_t vocab = 1 + h.Below(rep % 3 == 0 ? 40000 : 300);
    h.Check(h.gen().Row(vocab, 3.0, 5.0), "random size");
  }
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestOnTiesAndPlateaus) {
  StabilityHarness h(303);
  for (const std::size_t vocab : kVocabSizes) {
    std::vector<float> row = h.gen().Row(vocab, 2.0, 0.0);
    for (float& x : row) x = std::round(x * 2.0f) / 2.0f;  // few distinct values
    h.Check(row, "quantised");
    h.Check(std::vector<float>(vocab, 1.5f), "constant");
    h.Check(std::vector<float>(vocab, 0.0f), "zeros");
    std::vector<float> zeros(vocab, 0.0f);
    h.Sprinkle(&zeros, 0.3, -0.0f);
    h.Check(zeros, "signed zeros");
  }
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestWhenTheMaximumKeepsGrowing) {
  StabilityHarness h(404);
  for (const std::size_t vocab : kVocabSizes) {
    std::vector<float> rising(vocab), falling(vocab);
    for (std::size_t i = 0; i < vocab; ++i) {
      rising[i] = 1e-3f * static_cast<float>(i) + 0.1f * h.gen().Normal();
      falling[i] = -rising[i];
    }
    h.Check(rising, "rising");  // rescales the running sums at every block
    h.Check(falling, "falling");
    std::vector<float> steps = h.gen().Row(vocab, 1.0, 0.0);
    for (std::size_t i = 0; i < vocab; ++i) steps[i] += 30.0f * (i / 2048);
    h.Check(steps, "steps");  // each block's values underflow the previous sums
  }
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestOnNonFiniteLogits) {
  StabilityHarness h(505);
  for (const std::size_t vocab : kVocabSizes) {
    for (const float value : {-kStabilityInf, kStabilityNan, kStabilityInf}) {
      std::vector<float> row = h.gen().Row(vocab, 2.5, 8.0);
      h.Sprinkle(&row, h.gen().Uniform() * 0.5, value);
      h.Check(row, "sprinkled " + std::to_string(value));
    }
    h.Check(std::vector<float>(vocab, -kStabilityInf), "all -inf");
    h.Check(std::vector<float>(vocab, kStabilityNan), "all NaN");
    std::vector<float> mixed(vocab, -kStabilityInf);
    h.Sprinkle(&mixed, 0.2, kStabilityNan);
    h.Check(mixed, "-inf and NaN");
    mixed[h.Below(vocab)] = 3.0f;
    h.Check(mixed, "one finite among -inf and NaN");
  }
}

TEST(RowDigestStabilityTest, MatchesReleasedDigestOnExtremeMagnitudes) {
  StabilityHarness h(606);
  for (const std::size_t vocab : kVocabSizes) {
    std::vector<float> huge = h.gen().Row(vocab, 1.0, 0.0);
    for (float& x : huge) x *= 1e37f;  // x - max overflows to -inf
    huge[h.Below(vocab)] = kMaxFloat;
    h.Check(huge, "huge");
    std::vector<float> tiny = h.gen().Row(vocab, 1.0, 0.0);
    for (float& x : tiny) x *= 1e-40f;  // subnormal logits
    h.Sprinkle(&tiny, 0.1, kTiny);
    h.Check(tiny, "subnormal");
    std::vector<float> cutoff(vocab);
    for (float& x : cutoff) x = -70.0f - 20.0f * static_cast<float>(h.gen().Uniform());
    h.Check(cutoff, "around the exp cutoff");  // t on both sides of -80
    std::vector<float> wide = h.gen().Row(vocab, 300.0, 0.0);
    h.Check(wide, "wide");
  }
}

}  // namespace
}  // namespace orch::digest
