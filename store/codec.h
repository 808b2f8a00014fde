// Value encoding of the store's records: compact, versioned binary.
//
// Every encoded record starts with a format version byte (currently 5; version 1 lacks
// RunRecord::summary, version 2 PlanRecord::owner, version 3 the RunRecord provenance,
// version 4 the RunRecord times; all are still read), then its fields
// in declaration order: strings as a varint length and the bytes, integers as varints
// (signed ones zigzag-encoded), enums and flags as one byte. A new version only appends
// fields. A decoder checks enum ranges and that every byte is consumed; anything else is
// DataLoss naming the table and key. A record of a version above this orch's is
// FailedPrecondition: "decode runs/r1: written by a newer orch (format version 5, this
// orch reads up to 4)". Digest bytes and fingerprint JSON are stored raw.
#pragma once

#include <cstdint>
#include <optional>
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
std::string EncodeBundle(const BundleRecord& bundle);
std::string EncodeSigner(const SignerRecord& signer);

// `key` only names the record in the error: "decode runs/r1: ...".
Result<PlanRecord> DecodePlan(std::string_view key, std::string_view bytes);
Result<JobRecord> DecodeJob(std::string_view key, std::string_view bytes);
Result<RunRecord> DecodeRun(std::string_view key, std::string_view bytes);
Result<EventRecord> DecodeEvent(std::string_view key, std::string_view bytes);
Result<BundleRecord> DecodeBundle(std::string_view key, std::string_view bytes);
Result<SignerRecord> DecodeSigner(std::string_view key, std::string_view bytes);

// The job id of an encoded run, read from the fields every version (also a newer one)
// starts with; nullopt when even those do not decode. Only to tell whose a run is that
// DecodeRun refuses.
std::optional<std::string> PeekRunJobId(std::string_view bytes);

// The record count of a chunk marker (EncodeChunkCount).
Result<uint32_t> DecodeChunkCount(std::string_view key, std::string_view bytes);

}  // namespace orch::store
