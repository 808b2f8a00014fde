// Digest v2's contract: every vector variant equals the frozen scalar
// definition (row_digest_v2_reference.h) bit for bit on every row; hash,
// flags, top-k, argmax and target logit equal v1's; logsumexp, entropy and the
// target's log-probability stay within the documented bounds of the exact
// values (docs/metrics.md, "Digest versions").
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "digest/row_digest.h"
#include "digest/row_pass.h"
#include "tests/digest/row_digest_reference.h"
#include "tests/digest/row_digest_v2_reference.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

constexpr float kV2Inf = std::numeric_limits<float>::infinity();
constexpr float kV2Nan = std::numeric_limits<float>::quiet_NaN();
constexpr std::size_t kVocabSizes[] = {1,    2,    3,    4,    5,    7,     15,    16,
                                       17,   31,   33,   63,   100,  1000,  2047,  2048,
                                       2049, 4095, 4097, 6145, 8191, 32000, 32003, 152064};
constexpr internal::VectorIsa kIsas[] = {internal::VectorIsa::kBaseline, internal::VectorIsa::kAvx2,
                                         internal::VectorIsa::kAvx512};
constexpr DigestOptions kV1Options(std::uint32_t k, std::int32_t target) {
  return {k, target, DigestVersion::kV1};
}

std::uint64_t Bits(double x) { return std::bit_cast<std::uint64_t>(x); }
std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// The fields every digest version shares.
void ExpectSameRowFields(const RowDigest& a, const RowDigest& b) {
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.argmax, b.argmax);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.target_id, b.target_id);
  EXPECT_EQ(Bits(a.target_logit), Bits(b.target_logit));
  ASSERT_EQ(a.top.size(), b.top.size());
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_EQ(a.top[i].id, b.top[i].id) << "top[" << i << "]";
    EXPECT_EQ(Bits(a.top[i].logit), Bits(b.top[i].logit)) << "top[" << i << "]";
  }
}

void ExpectSameBits(const RowDigest& actual, const RowDigest& expected, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(actual.version, DigestVersion::kV2);
  EXPECT_EQ(Bits(actual.logsumexp), Bits(expected.logsumexp))
      << actual.logsumexp << " vs " << expected.logsumexp;
  EXPECT_EQ(Bits(actual.entropy), Bits(expected.entropy))
      << actual.entropy << " vs " << expected.entropy;
  ExpectSameRowFields(actual, expected);
}

class V2Harness {
 public:
  explicit V2Harness(std::uint64_t seed) : gen_(seed) {}
  testing::RowGenerator& gen() { return gen_; }
  std::size_t Below(std::size_t n) { return static_cast<std::size_t>(gen_.Uniform() * n); }

  // The public entry point (v2 by default) and every available variant
  // against the scalar definition; v1's shared fields besides.
  void Check(const std::vector<float>& row, const std::string& kind) {
    const std::uint32_t k = 1 + static_cast<std::uint32_t>(Below(64));
    const std::int32_t target =
        Below(4) == 0 ? kNoTarget : static_cast<std::int32_t>(Below(row.size()));
    const DigestOptions options{k, target};
    const RowDigest expected = testing::ReferenceRowDigestV2(row, options);
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
    SCOPED_TRACE(what + " against v1");
    ExpectSameRowFields(actual, testing::ReferenceRowDigest(row, kV1Options(k, target)));
  }

  void Sprinkle(std::vector<float>* row, double fraction, float value) {
    const std::size_t count = 1 + static_cast<std::size_t>(fraction * row->size());
    for (std::size_t i = 0; i < count; ++i) (*row)[Below(row->size())] = value;
  }

 private:
  testing::RowGenerator gen_;
  int rows_ = 0;
};

TEST(RowDigestV2Test, NewDigestsAreV2AndV1StaysSelectable) {
  const std::vector<float> row = testing::RowGenerator(1).Row(5000, 2.0, 6.0);
  RowDigest d;
  ASSERT_TRUE(ComputeRowDigest(row, {}, &d).ok());
  EXPECT_EQ(d.version, DigestVersion::kV2);
  ASSERT_TRUE(ComputeRowDigest(row, kV1Options(20, kNoTarget), &d).ok());
  EXPECT_EQ(d.version, DigestVersion::kV1);
  EXPECT_EQ(Bits(d.logsumexp),
            Bits(testing::ReferenceRowDigest(row, kV1Options(20, kNoTarget)).logsumexp));
  EXPECT_EQ(ComputeRowDigest(row, {20, kNoTarget, static_cast<DigestVersion>(3)}, &d).code(),
            StatusCode::kInvalidArgument);
}

TEST(RowDigestV2Test, EveryVariantMatchesTheDefinitionOnGaussianAndZipfRows) {
  V2Harness h(111);
  for (const std::size_t vocab : kVocabSizes) {
    for (int rep = 0; rep < 3; ++rep) {
      const double sigma = std::pow(10.0, -2.0 + 4.0 * h.gen().Uniform());
      h.Check(h.gen().Row(vocab, sigma, 20.0 * h.gen().Uniform()), "gaussian");
      h.Check(h.gen().ZipfRow(vocab, 0.5 + 2.5 * h.gen().Uniform()), "zipf");
    }
  }
  for (int rep = 0; rep < 60; ++rep) {
    const std::size_t vocab = 1 + h.Below(rep % 3 == 0 ? 40000 : 300);
    h.Check(h.gen().Row(vocab, 3.0, 5.0), "random size");
  }
}

TEST(RowDigestV2Test, EveryVariantMatchesTheDefinitionOnTiesAndGrowingMaxima) {
  V2Harness h(222);
  for (const std::size_t vocab : kVocabSizes) {
    std::vector<float> row = h.gen().Row(vocab, 2.0, 0.0);
    for (float& x : row) x = std::round(x * 2.0f) / 2.0f;
    h.Check(row, "quantised");
    h.Check(std::vector<float>(vocab, 1.5f), "constant");
    std::vector<float> zeros(vocab, 0.0f);
    h.Sprinkle(&zeros, 0.3, -0.0f);
    h.Check(zeros, "signed zeros");
    std::vector<float> rising(vocab), steps = h.gen().Row(vocab, 1.0, 0.0);
    for (std::size_t i = 0; i < vocab; ++i) {
      rising[i] = 1e-3f * static_cast<float>(i) + 0.1f * h.gen().Normal();
      steps[i] += 30.0f * static_cast<float>(i / 2048);
    }
    h.Check(rising, "rising");
    h.Check(steps, "steps");  // earlier blocks rescaled below the skip margin
    for (float& x : rising) x = -x;
    h.Check(rising, "falling");
  }
}

// Blocks whose maximum sits just below and just above the skip margin
// (bit_width(V - 1) + 24) ln 2 under the row's maximum: the rule, not an
// approximation of it, decides which blocks add.
TEST(RowDigestV2Test, EveryVariantSkipsExactlyTheBlocksBelowTheMargin) {
  V2Harness h(333);
  for (const std::size_t vocab : {8192ul, 32000ul, 152064ul}) {
    const float margin = static_cast<float>(std::bit_width(vocab - 1) + 24) * 0.693147182f;
    for (const float offset : {-0.01f, 0.01f, -1.0f, 1.0f}) {
      std::vector<float> row(vocab);
      for (std::size_t i = 0; i < vocab; ++i) {
        row[i] = i < 2048 ? 0.0f : -margin + offset - 0.5f * static_cast<float>(h.gen().Uniform());
        if (i >= 2048 && i % 2048 == 7) row[i] = -margin + offset;
      }
      h.Check(row, "around the skip margin " + std::to_string(offset));
    }
  }
}

TEST(RowDigestV2Test, EveryVariantMatchesTheDefinitionOnNonFiniteAndExtremeRows) {
  V2Harness h(444);
  for (const std::size_t vocab : kVocabSizes) {
    for (const float value : {-kV2Inf, kV2Nan, kV2Inf}) {
      std::vector<float> row = h.gen().Row(vocab, 2.5, 8.0);
      h.Sprinkle(&row, h.gen().Uniform() * 0.5, value);
      h.Check(row, "sprinkled " + std::to_string(value));
    }
    h.Check(std::vector<float>(vocab, -kV2Inf), "all -inf");
    h.Check(std::vector<float>(vocab, kV2Nan), "all NaN");
    std::vector<float> huge = h.gen().Row(vocab, 1.0, 0.0);
    for (float& x : huge) x *= 1e37f;
    huge[h.Below(vocab)] = std::numeric_limits<float>::max();
    h.Check(huge, "huge");
    std::vector<float> tiny = h.gen().Row(vocab, 1.0, 0.0);
    for (float& x : tiny) x *= 1e-40f;
    h.Check(tiny, "subnormal");
    std::vector<float> cutoff(vocab);
    for (float& x : cutoff) x = -70.0f - 20.0f * static_cast<float>(h.gen().Uniform());
    h.Check(cutoff, "around the exp cutoff");
    h.Check(h.gen().Row(vocab, 300.0, 0.0), "wide");
  }
}

// Exact statistics in long double, two passes.
struct Exact {
  long double logsumexp = 0, entropy = 0;
};

Exact ExactStats(const std::vector<float>& row) {
  long double max = -INFINITY;
  for (const float x : row) max = std::max<long double>(max, x);
  long double sum = 0, weighted = 0;
  for (const float x : row) {
    const long double t = x - max;
    sum += std::exp(t);
    weighted += std::exp(t) * t;
  }
  return {max + std::log(sum), std::log(sum) - weighted / sum};
}

// Worst absolute errors of one digest version against the exact values.
struct WorstErrors {
  double logsumexp = 0, logprob = 0, entropy = 0;
};

void AddErrors(const std::vector<float>& row, std::int32_t target, DigestVersion version,
               const Exact& exact, WorstErrors* worst) {
  RowDigest d;
  ASSERT_TRUE(ComputeRowDigest(row, {20, target, version}, &d).ok());
  const long double logprob_error =
      (d.target_logit - d.logsumexp) - (row[target] - exact.logsumexp);
  worst->logsumexp =
      std::max(worst->logsumexp, static_cast<double>(std::fabs(d.logsumexp - exact.logsumexp)));
  worst->logprob = std::max(worst->logprob, static_cast<double>(std::fabs(logprob_error)));
  worst->entropy =
      std::max(worst->entropy, static_cast<double>(std::fabs(d.entropy - exact.entropy)));
}

// The documented bounds (docs/metrics.md, "Digest versions"): |logsumexp
// error| and |logprob error| <= 2e-7 nats, |entropy error| <= 5e-7 nats, the
// same as v1's on the same rows. Rows of every shape the benchmark and the
// engines give, at both target vocabularies: flat (the engines' untrained and
// small models), peaked Gaussian and Zipf.
TEST(RowDigestV2Test, StatisticsStayWithinTheDocumentedBoundsOfTheExactValues) {
  testing::RowGenerator gen(555);
  WorstErrors v1, v2;
  for (const std::size_t vocab : {1000ul, 32000ul, 152064ul}) {
    for (int rep = 0; rep < 18; ++rep) {
      const std::vector<float> row =
          rep % 3 == 0   ? gen.Row(vocab, 0.1 + 0.9 * gen.Uniform(), 0.0)
          : rep % 3 == 1 ? gen.Row(vocab, 0.1 + 5.0 * gen.Uniform(), 30.0 * gen.Uniform())
                         : gen.ZipfRow(vocab, 0.5 + 2.5 * gen.Uniform());
      const auto target = static_cast<std::int32_t>(gen.Uniform() * vocab);
      const Exact exact = ExactStats(row);
      AddErrors(row, target, DigestVersion::kV1, exact, &v1);
      AddErrors(row, target, DigestVersion::kV2, exact, &v2);
    }
  }
  std::printf(
      "worst |error| of logsumexp, log p(target), entropy: v1 %.3g %.3g %.3g, "
      "v2 %.3g %.3g %.3g\n",
      v1.logsumexp, v1.logprob, v1.entropy, v2.logsumexp, v2.logprob, v2.entropy);
  EXPECT_LE(v2.logsumexp, 2e-7);
  EXPECT_LE(v2.logprob, 2e-7);
  EXPECT_LE(v2.entropy, 5e-7);
}

// Flat rows, where every term counts alike and per-term errors average out:
// both versions land within 1e-8 nats of the exact logsumexp (a rounded y =
// t log2(e) or float partial sums would show here, at 1e-8 to 3e-8).
TEST(RowDigestV2Test, FlatRowsKeepLogSumExpWithinOneHundredMillionthOfExact) {
  testing::RowGenerator gen(666);
  WorstErrors v1, v2;
  for (const std::size_t vocab : {1024ul, 32000ul, 152064ul}) {
    for (int rep = 0; rep < 8; ++rep) {
      const std::vector<float> row = gen.Row(vocab, 0.1 + 0.9 * gen.Uniform(), 0.0);
      const auto target = static_cast<std::int32_t>(gen.Uniform() * vocab);
      const Exact exact = ExactStats(row);
      AddErrors(row, target, DigestVersion::kV1, exact, &v1);
      AddErrors(row, target, DigestVersion::kV2, exact, &v2);
    }
  }
  std::printf("flat rows, worst |error| of logsumexp, entropy: v1 %.3g %.3g, v2 %.3g %.3g\n",
              v1.logsumexp, v1.entropy, v2.logsumexp, v2.entropy);
  EXPECT_LE(v2.logsumexp, 1e-8);
  EXPECT_LE(v2.entropy, 2e-8);
}

}  // namespace
}  // namespace orch::digest
