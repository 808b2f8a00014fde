// message_fuzzer: one input is one frame. It must decode or be refused with a
// Status; a decoded message must survive Encode/Decode unchanged and is then
// handled by a coordinator in a live state (fuzz/coordinator_scenario.h) as
// sent by the agent that holds a run, after which the clock passes every lease
// and the coordinator ticks.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/coordinator_scenario.h"
#include "fuzz/fuzz_check.h"
#include "protocol/codec.h"

namespace {

// Encode(Decode(Encode(m))) == Encode(m): what is accepted is re-sent intact.
void CheckRoundTrip(const orch::protocol::Message& message) {
  std::string once = orch::protocol::Encode(message);
  orch::Result<orch::protocol::Message> again = orch::protocol::Decode(once);
  FUZZ_EXPECT(again.ok());
  FUZZ_EXPECT(orch::protocol::Encode(*again) == once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string frame(reinterpret_cast<const char*>(data), size);
  orch::Result<orch::protocol::Message> message = orch::protocol::Decode(frame);
  if (!message.ok()) return 0;
  CheckRoundTrip(*message);
  orch::fuzz::CoordinatorScenario scenario;
  scenario.Frame(orch::fuzz::kAgent, std::move(frame));
  scenario.Advance(std::chrono::minutes(1));
  return 0;
}
