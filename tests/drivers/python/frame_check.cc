// orch-frame-check: reads a driver's stdout stream on stdin and checks it with
// the agent's own code, for the Python driver SDK's tests
// (tests/drivers/python/sdk_test.py): the frame parser (driver_protocol/frames.h),
// the record decoder (digest/record_codec.h), and, for records that carry the
// full row, the C++ digest of that row; for top-k-only records, the C++
// DigestTopLogprobs of the pairs the record holds, compared as record bytes.
// Prints one JSON object:
//   {"stream_error": "" or the parser's message,
//    "frames": [{"type": N, "payload": "..." (hello/done/error)}],
//    "records": [{"position", "input_token", "output_token", "argmax",
//                 "hash": "HIGHLOW", "top_k_only", "top": [[id, value]...],
//                 "reencoded_equal", "digest_equal"}],
//    "reencoded_stream_equal": whether re-encoding every frame gives the input}
// Exit 0 whenever it could read stdin.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver_protocol/frames.h"
#include "digest/record_codec.h"
#include "digest/row_digest.h"
#include "digest/top_logprobs.h"

namespace {

using nlohmann::json;
using orch::driver_protocol::DriverFrame;
using orch::driver_protocol::DriverFrameType;

std::string Hex(std::uint64_t value) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = kDigits[value & 15];
  return out;
}

// Whether a top-k-only record is, byte for byte, the record the C++ library
// makes from the same pairs, target and processed flag.
bool TopKDigestMatches(const orch::digest::PositionRecord& record) {
  const orch::digest::RowDigest& carried = record.digest;
  std::vector<std::int32_t> ids;
  std::vector<float> values;
  for (const orch::digest::TokenLogit& t : carried.top) {
    ids.push_back(t.id);
    values.push_back(t.logit);
  }
  orch::digest::PositionRecord computed = record;
  const orch::Status status = orch::digest::DigestTopLogprobs(
      {carried.version, ids, values, carried.vocab_size, carried.target_id, carried.target_logit,
       carried.flags & orch::digest::kRowProcessed},
      &computed.digest);
  return status.ok() &&
         orch::digest::EncodePositionRecord(computed) == orch::digest::EncodePositionRecord(record);
}

// Whether the digest the record carries is what the C++ library computes
// from the record's own full row (null when the record has no full row), or
// from its pairs for a top-k-only record.
json DigestMatches(const orch::digest::PositionRecord& record) {
  if (record.digest.is_top_k_only()) return TopKDigestMatches(record);
  if (record.full_row.empty()) return nullptr;
  const orch::digest::RowDigest& carried = record.digest;
  orch::digest::DigestOptions options{
      static_cast<std::uint32_t>(std::max<std::size_t>(carried.top.size(), 1)), carried.target_id,
      carried.version};  // recomputed by the version it names
  orch::digest::RowDigest computed;
  if (!orch::digest::ComputeRowDigest(record.full_row, options, &computed).ok()) return false;
  return computed == carried;
}

json RecordJson(const std::string& payload) {
  auto record = orch::digest::DecodePositionRecord(payload);
  if (!record.ok()) return {{"decode_error", record.status().message()}};
  json top = json::array();
  for (const orch::digest::TokenLogit& t : record->digest.top) top.push_back({t.id, t.logit});
  return {{"position", record->position},
          {"top_k_only", record->digest.is_top_k_only()},
          {"top", top},
          {"input_token", record->input_token},
          {"output_token", record->output_token},
          {"version", static_cast<int>(record->digest.version)},
          {"argmax", record->digest.argmax},
          {"flags", record->digest.flags},
          {"top_count", record->digest.top.size()},
          {"full_row", record->full_row.size()},
          {"hash", Hex(record->digest.hash.high) + Hex(record->digest.hash.low)},
          {"reencoded_equal", orch::digest::EncodePositionRecord(*record) == payload},
          {"digest_equal", DigestMatches(*record)}};
}

}  // namespace

int main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  orch::driver_protocol::DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  orch::Status status = parser.Feed(input, &frames);
  if (status.ok()) status = parser.Finish();
  json out = {{"stream_error", status.ok() ? "" : status.message()},
              {"frames", json::array()},
              {"records", json::array()}};
  std::string reencoded;
  for (const DriverFrame& frame : frames) {
    reencoded += orch::driver_protocol::EncodeDriverFrame(frame.type, frame.payload);
    json entry = {{"type", static_cast<int>(frame.type)}};
    if (frame.type == DriverFrameType::kRecord) {
      out["records"].push_back(RecordJson(frame.payload));
    } else {
      entry["payload"] = frame.payload;
    }
    out["frames"].push_back(entry);
  }
  out["reencoded_stream_equal"] = status.ok() && reencoded == input;
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}
