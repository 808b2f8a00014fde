// driver_frames_fuzzer: one input is what a driver wrote on stdout
// (docs/driver-protocol.md), after one leading byte that sets how the agent's
// reads cut it (pieces of 1 to 256 bytes, each piece one byte longer than the
// last, wrapping). The parser must frame it or fail with a Status; it must
// frame the same whichever way the bytes were cut, and stay failed once failed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "driver_protocol/frames.h"
#include "fuzz/fuzz_check.h"

namespace {

using orch::driver_protocol::DriverFrame;
using orch::driver_protocol::DriverFrameParser;

struct Outcome {
  std::vector<DriverFrame> frames;
  orch::Status fed;
  orch::Status finished;
};

Outcome Parse(std::string_view stream, std::size_t first_piece) {
  Outcome outcome;
  DriverFrameParser parser;
  std::size_t piece = first_piece;
  while (!stream.empty() && outcome.fed.ok()) {
    std::string_view part = stream.substr(0, piece);
    stream.remove_prefix(part.size());
    outcome.fed = parser.Feed(part, &outcome.frames);
    piece = piece % 256 + 1;
  }
  if (!outcome.fed.ok()) FUZZ_EXPECT(parser.Feed("", &outcome.frames).code() == outcome.fed.code());
  outcome.finished = parser.Finish();
  return outcome;
}

bool SameFrames(const std::vector<DriverFrame>& a, const std::vector<DriverFrame>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].payload != b[i].payload) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  Outcome cut = Parse(stream, std::size_t{data[0]} % 256 + 1);
  Outcome whole = Parse(stream, stream.size() + 1);
  FUZZ_EXPECT(cut.fed.code() == whole.fed.code());
  FUZZ_EXPECT(cut.finished.code() == whole.finished.code());
  if (whole.fed.ok()) FUZZ_EXPECT(SameFrames(cut.frames, whole.frames));
  return 0;
}
