// The fingerprint differences between two runs: host against host, engine against
// engine, using fingerprint/diff.h on the stored JSON.
#pragma once

#include <vector>

#include "report/report.h"
#include "report/run_source.h"
#include "store/records.h"

namespace orch::report {

// Two entries, "host" then "engine". An id that is empty, not stored, or whose JSON does
// not parse gives an entry with a note and no differences; never an error. When neither
// run has an engine fingerprint id, the engine entry compares what each run's driver
// reported in its hello (stored in the run's summary: engine version, commit, kernel path,
// backend file, devices), fields named "hello.FIELD"; ids are then "driver hello".
std::vector<FingerprintComparison> CompareFingerprints(RunSource& source,
                                                       const store::RunRecord& reference,
                                                       const store::RunRecord& other);

}  // namespace orch::report
