// Value encoding of the store's records: compact, versioned binary.
//
// Every encoded record starts with a format version byte (currently 2; version 1 lacks
// RunRecord::summary and is still read), then its fields in declaration order: strings
// as a varint length and the bytes, integers as varints (signed ones zigzag-encoded),
// enums and flags as one byte. A decoder accepts only the versions it knows, checks enum
// ranges and that every byte is consumed; anything else is DataLoss naming the table and
// key. Digest bytes and fingerprint JSON are stored raw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "store/keys.h"
#include "store/records.h"

namespace orch::store {

std::string EncodePlan(const PlanRecord& plan);
std::string EncodeJob(const JobRecord& job);
std::string EncodeRun(const RunRecord& run);
std::string EncodeEvent(const EventRecord& event);
std::string EncodeChunkCount(uint32_t records);

// `key` only names the record in the error: "decode runs/r1: ...".
Result<PlanRecord> DecodePlan(std::string_view key, std::string_view bytes);
Result<JobRecord> DecodeJob(std::string_view key, std::string_view bytes);
Result<RunRecord> DecodeRun(std::string_view key, std::string_view bytes);
Result<EventRecord> DecodeEvent(std::string_view key, std::string_view bytes);

}  // namespace orch::store
