// store_codec_fuzzer: one input is a leading byte that picks the record kind
// (plan, job, run, event, bundle, signer: byte % 6) and the bytes of a stored value. The
// decoder (store/codec.h) must decode it or refuse it with a Status; a decoded
// record must encode and decode back to itself (older versions are upgraded,
// not lost).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "store/codec.h"

namespace {

template <typename Decode, typename Encode>
void RoundTrip(std::string_view bytes, Decode decode, Encode encode) {
  auto record = decode("fuzz/key", bytes);
  if (!record.ok()) return;
  auto again = decode("fuzz/key", encode(*record));
  FUZZ_EXPECT(again.ok());
  FUZZ_EXPECT(*again == *record);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace s = orch::store;
  switch (data[0] % 6) {
    case 0:
      RoundTrip(bytes, s::DecodePlan, s::EncodePlan);
      break;
    case 1:
      RoundTrip(bytes, s::DecodeJob, s::EncodeJob);
      break;
    case 2:
      RoundTrip(bytes, s::DecodeRun, s::EncodeRun);
      break;
    case 3:
      RoundTrip(bytes, s::DecodeEvent, s::EncodeEvent);
      break;
    case 4:
      RoundTrip(bytes, s::DecodeBundle, s::EncodeBundle);
      break;
    default:
      RoundTrip(bytes, s::DecodeSigner, s::EncodeSigner);
      break;
  }
  return 0;
}
