// How far one run got: the positions its stored digests hold, how many of them carry a
// generated token, and why its driver says generation stopped. A report compares this
// with what the plan requested (report/warnings.h).
//
// The stop reason comes from the driver's `done` frame, which the agent keeps in the run's
// summary (store::RunRecord::summary, JSON {"done": {"stop": "eos", "generated_tokens":
// N}}): "eos" (the model emitted an end-of-generation token), "max_tokens" (the plan's
// limit was reached), or another word the driver chose. Drivers that say nothing (the test
// driver, older builds) leave it unknown; the count then comes from the stored digests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "report/run_source.h"

namespace orch::report {

struct GenerationStop {
  std::optional<std::string> reason;       // done.stop
  std::optional<std::uint64_t> generated;  // done.generated_tokens, else done.generated_ids
};

// What `summary` (a run summary's JSON) says; empty for anything missing or malformed.
GenerationStop ParseGenerationStop(const std::string& summary);

struct RunExtent {
  std::uint64_t positions = 0;  // stored records
  std::uint64_t generated = 0;  // stored records with a generated (output) token
  GenerationStop stop;
  // The generated-token count a report trusts: the driver's when it gave one.
  std::uint64_t generated_tokens() const { return stop.generated.value_or(generated); }
};

// Scans the stored records of `run_id` once; `summary` is that run's summary. Errors: the
// source's.
Result<RunExtent> MeasureRun(RunSource& source, const std::string& run_id,
                             const std::string& summary);

}  // namespace orch::report
