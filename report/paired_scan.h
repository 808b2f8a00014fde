// Reads two runs in lockstep, position by position, buffering at most one chunk of each.
//
// Each side is read in chunks of kScanChunk records (one RunSource scan per chunk), so
// memory does not depend on the number of positions. Positions are matched by value: a
// position present on one side only is visited with the other side null.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"
#include "digest/record_codec.h"
#include "report/run_source.h"

namespace orch::report {

inline constexpr std::size_t kScanChunk = 512;

// Either pointer may be null (that side has no record at this position), never both.
// Returns false to stop.
using PairVisitor = std::function<bool(const digest::PositionRecord* reference,
                                       const digest::PositionRecord* other)>;

// Visits the union of both runs' positions in increasing order. Errors from the source
// are returned as they are.
Status ScanPaired(RunSource& source, std::string_view reference_run, std::string_view other_run,
                  const PairVisitor& visit);

}  // namespace orch::report
