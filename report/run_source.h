// RunSource: where a report reads a run's per-position records and the fingerprints its
// runs name. The report core reads only through this interface; MakeStoreRunSource adapts
// a Store (store/store.h), decoding each stored digest with digest/record_codec.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "digest/record_codec.h"
#include "store/store.h"

namespace orch::report {

// Receives records in position order; returns false to stop the scan early. The record
// is valid only during the call.
using RecordVisitor = std::function<bool(const digest::PositionRecord& record)>;

class RunSource {
 public:
  virtual ~RunSource() = default;
  // Streams the records of `run_id` with position >= from_position. Memory use does not
  // depend on the number of records. DataLoss naming the run and position for a record
  // that does not decode.
  virtual Status ScanRecords(std::string_view run_id, std::uint64_t from_position,
                             const RecordVisitor& visit) = 0;
  // The stored fingerprint JSON (NotFound when unknown).
  virtual Result<std::string> GetFingerprint(std::string_view id) = 0;
};

// Reads from `store`, which must outlive the source.
std::unique_ptr<RunSource> MakeStoreRunSource(store::Store& store);

}  // namespace orch::report
