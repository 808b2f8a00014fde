// The whole key scheme of the store, for every backend (RocksDB column families and the
// memory store's sorted maps use the same tables, keys and ordering).
//
//   table      key                                      value
//   plans      experiment                               PlanRecord (codec.h)
//   plan_jobs  Prefix(experiment) + job id              empty (index: jobs by experiment)
//   jobs       job id                                   JobRecord
//   runs       run id                                   RunRecord
//   chunks     Prefix(run id) + be64(seq)               be32 record count
//   digests    Prefix(run id) + be64(position)          digest bytes, raw
//   hosts      fingerprint id                           fingerprint JSON, raw
//   events     be64(seq)                                EventRecord
//   bundles    bundle SHA-256 (hex)                     BundleRecord
//   signers    Ed25519 public key (Z85)                 SignerRecord
//
// Prefix(id) is one length byte then the id, so a run's digests are exactly the keys
// that start with Prefix(run id) (no run id is a prefix of another's key range) and
// big-endian integers make byte order equal numeric order: one run is one range scan.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::store {

enum class Table : uint8_t {
  kPlans = 0,
  kPlanJobs,
  kJobs,
  kRuns,
  kChunks,
  kDigests,
  kHosts,
  kEvents,
  kBundles,
  kSigners,
};
inline constexpr int kTableCount = 10;

// The column family name of a table: "plans", "plan_jobs", ...
std::string_view TableName(Table table);

inline constexpr size_t kMaxIdBytes = 255;

// OK for a 1..255-byte id; InvalidArgument naming `what` otherwise.
Status ValidateId(std::string_view what, std::string_view id);

// Big-endian fixed-width integers.
void AppendBigEndian64(std::string& out, uint64_t value);
uint64_t ReadBigEndian64(std::string_view eight_bytes);

std::string IdPrefix(std::string_view id);  // length byte + id
std::string PlanJobKey(std::string_view experiment, std::string_view job_id);
std::string ChunkKey(std::string_view run_id, uint64_t seq);
std::string DigestKey(std::string_view run_id, uint64_t position);
std::string EventKey(uint64_t seq);

// The last eight bytes of a chunk, digest or event key (its seq or position).
uint64_t TrailingNumber(std::string_view key);

// The job id of a plan_jobs key that starts with IdPrefix(experiment).
std::string_view JobIdOfPlanJobKey(std::string_view key, std::string_view experiment);

// A key made printable for error messages: "runs/abc" or "digests/<hex>".
std::string DescribeKey(Table table, std::string_view key);

}  // namespace orch::store
