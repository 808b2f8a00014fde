// One per-position record as a driver produces it, and its compact binary form.
//
// A driver writes one PositionRecord per evaluated position (teacher forcing) or per
// generated token (generation). Records travel as opaque bytes through the agent and the
// coordinator (a DigestChunk carries them, protocol/messages.h) and are decoded again by reports.
//
// Layout (little-endian): u8 version, u64 position, i32 input_token, i32
// output_token, u32 vocab_size, u32 flags, i32 argmax, f64 logsumexp, f64 entropy, u64
// hash.low, u64 hash.high, i32 target_id, f32 target_logit, u32 top_count, top_count x
// (i32 id, f32 logit), u32 full_row_count (0 or vocab_size), full_row_count x f32.
// The version byte is the digest's version (RowDigest::version): 1 for digest v1, 2 for
// digest v2; both have this same layout. Versions only grow (a new layout or a new digest
// definition takes the next number); a decoder rejects versions it does not know.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "digest/row_digest.h"

namespace orch::digest {

// The versions this build reads; a record's version is its digest's.
inline constexpr std::uint8_t kOldestPositionRecordVersion = 1;
inline constexpr std::uint8_t kPositionRecordVersion = 2;

struct PositionRecord {
  std::uint64_t position = 0;
  std::int32_t input_token = -1;   // token fed at this position; -1 when not applicable
  std::int32_t output_token = -1;  // token generated at this step; -1 under teacher forcing
  RowDigest digest;
  std::vector<float> full_row;  // the whole logit row when the capture policy asks
  friend bool operator==(const PositionRecord&, const PositionRecord&) = default;
};

std::string EncodePositionRecord(const PositionRecord& record);

// DataLoss naming what is wrong (version, truncation, sizes, trailing bytes). Never reads
// out of bounds and never allocates more than the input can hold.
Result<PositionRecord> DecodePositionRecord(std::string_view bytes);

}  // namespace orch::digest
