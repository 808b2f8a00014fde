// Deterministic synthetic logit rows for the digest tests and benchmark.
//
// A row is Gaussian noise (the bulk of a vocabulary) plus a boosted "likely"
// token, which gives the peaked, long-tailed shape of real next-token logits.
// The generator uses its own Box-Muller transform on std::mt19937_64, whose
// output the standard fixes, so the rows are the same on every platform and
// standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace orch::digest::testing {

class RowGenerator {
 public:
  explicit RowGenerator(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) from 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // `vocab` logits: N(0, sigma) per token plus `boost` on one random token.
  std::vector<float> Row(std::size_t vocab, double sigma, double boost) {
    std::vector<float> row(vocab);
    for (float& x : row) x = static_cast<float>(sigma * Normal());
    row[engine_() % vocab] += static_cast<float>(boost);
    return row;
  }

  // A Zipf-shaped row, the long-tailed shape of real next-token distributions:
  // the token of rank r (ids shuffled) has logit -alpha * ln(r) + N(0, 0.1).
  // Larger alpha gives a more confident row (alpha 1.1: top-20 mass about 0.6;
  // alpha 2.5: about 0.99).
  std::vector<float> ZipfRow(std::size_t vocab, double alpha) {
    std::vector<float> row(vocab);
    for (std::size_t r = 0; r < vocab; ++r) {
      row[r] = static_cast<float>(-alpha * std::log(r + 1.0) + 0.1 * Normal());
    }
    for (std::size_t i = vocab - 1; i > 0; --i) {
      std::swap(row[i], row[engine_() % (i + 1)]);
    }
    return row;
  }

  // A copy of `row` with N(0, noise) added to every logit (another stack's
  // rounding).
  std::vector<float> Perturbed(const std::vector<float>& row, double noise) {
    std::vector<float> out(row);
    for (float& x : out) x += static_cast<float>(noise * Normal());
    return out;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace orch::digest::testing
