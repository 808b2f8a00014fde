// frame_stream_fuzzer: one input is a script of transport events for a
// coordinator in a live state (fuzz/coordinator_scenario.h). Frames go through
// OnEvent raw, so frames that do not decode, bad-frame counting, ignored peers,
// reconnects and sequences (chunks then a finish, a lease expiring between
// them) are covered.
//
// Script: records of u8 op, u16 little-endian n, then for a frame n bytes
// (fewer when the input ends). op & 3 picks the peer (kAgent, kStranger, kCli,
// kAgent); (op >> 2) & 3 the event: 0 a frame of the n bytes, 1 connect, 2
// disconnect, 3 advance the clock by n * 100 ms and tick.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/coordinator_scenario.h"

namespace {

using orch::fuzz::CoordinatorScenario;

std::string_view Peer(std::uint8_t op) {
  constexpr std::string_view kPeers[] = {orch::fuzz::kAgent, orch::fuzz::kStranger,
                                         orch::fuzz::kCli, orch::fuzz::kAgent};
  return kPeers[op & 3];
}

// Performs one record of `script` and drops it from the front.
void Step(std::string_view& script, CoordinatorScenario& scenario) {
  std::uint8_t op = static_cast<std::uint8_t>(script[0]);
  std::size_t n = 0;
  if (script.size() >= 3) {
    n = static_cast<std::uint8_t>(script[1]) | static_cast<std::uint8_t>(script[2]) << 8;
  }
  script.remove_prefix(std::min<std::size_t>(3, script.size()));
  switch ((op >> 2) & 3) {
    case 0: {
      std::string_view frame = script.substr(0, n);
      script.remove_prefix(frame.size());
      scenario.Frame(Peer(op), std::string(frame));
      break;
    }
    case 1:
      scenario.Connect(Peer(op));
      break;
    case 2:
      scenario.Disconnect(Peer(op));
      break;
    default:
      scenario.Advance(std::chrono::milliseconds(100) * n);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view script(reinterpret_cast<const char*>(data), size);
  CoordinatorScenario scenario;
  while (!script.empty()) Step(script, scenario);
  return 0;
}
