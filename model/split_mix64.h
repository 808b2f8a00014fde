// SplitMix64: the weight generator of synthetic models. Written out here (not
// std::*_distribution, whose algorithms differ between standard libraries) so that a recipe
// gives the same numbers on every machine. Reference: Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators" (2014); constants as in Vigna's splitmix64.c.
#pragma once

#include <cstdint>

namespace orch::model {

class SplitMix64 final {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // A signed integer uniform in [-2^23, 2^23) from the top 24 bits of Next(); exact as a
  // float, so `NextSigned24() * scale` rounds once and is the same everywhere.
  std::int32_t NextSigned24() { return static_cast<std::int32_t>(Next() >> 40) - (1 << 23); }

 private:
  std::uint64_t state_;
};

}  // namespace orch::model
