#include "tests/chaos/chaos_schedule.h"

#include <cstdlib>
#include <string_view>

namespace orch::testing {

ChaosForm ChaosFormFromEnvironment() {
  const char* value = std::getenv("ORCH_CHAOS_LONG");
  if (value == nullptr || std::string_view(value) != "1") return ChaosForm{};
  return ChaosForm{.long_form = true, .rounds = 4, .faults = 4};
}

std::uint64_t ChaosSchedule::SeedFromEnvironment() {
  if (const char* value = std::getenv("ORCH_CHAOS_SEED"); value != nullptr && *value != '\0') {
    return std::strtoull(value, nullptr, 10);
  }
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::microseconds>(now).count()) %
         1000000000ull;
}

int ChaosSchedule::Between(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(engine_);
}

std::chrono::milliseconds ChaosSchedule::Between(std::chrono::milliseconds lo,
                                                 std::chrono::milliseconds hi) {
  auto count = std::uniform_int_distribution<std::int64_t>(lo.count(), hi.count())(engine_);
  return std::chrono::milliseconds(count);
}

bool ChaosSchedule::Coin() { return Between(0, 1) == 1; }

}  // namespace orch::testing
