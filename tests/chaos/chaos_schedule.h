// The random schedule of a chaos scenario: one seeded generator per test, so a failing
// run is repeated exactly (as far as the processes' own timing allows) by setting the
// seed it printed. The seed comes from ORCH_CHAOS_SEED, else from the clock; the form
// comes from ORCH_CHAOS_LONG (1: the long form, more rounds). Not thread-safe: the test
// thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>

namespace orch::testing {

struct ChaosForm {
  bool long_form = false;  // ORCH_CHAOS_LONG=1
  int rounds = 1;          // experiments per scenario: 1 short, 4 long
  int faults = 2;          // faults injected per experiment: 2 short, 4 long
};

// The form ORCH_CHAOS_LONG asks for.
ChaosForm ChaosFormFromEnvironment();

class ChaosSchedule {
 public:
  // `seed`: ORCH_CHAOS_SEED when set (decimal), else one drawn from the clock.
  static std::uint64_t SeedFromEnvironment();

  explicit ChaosSchedule(std::uint64_t seed) : seed_(seed), engine_(seed) {}

  std::uint64_t seed() const { return seed_; }
  // "ORCH_CHAOS_SEED=N": what to set to repeat this schedule; part of every failure.
  std::string Repeat() const { return "ORCH_CHAOS_SEED=" + std::to_string(seed_); }

  // A uniformly drawn integer in [lo, hi].
  int Between(int lo, int hi);
  // A uniformly drawn duration in [lo, hi].
  std::chrono::milliseconds Between(std::chrono::milliseconds lo, std::chrono::milliseconds hi);
  // true with probability 1/2.
  bool Coin();

 private:
  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

}  // namespace orch::testing
