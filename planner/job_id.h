// Job ids: a hash of the canonical form of a job's full coordinate.
//
// Canonical form (docs/spec.md, "Job ids"): compact JSON, keys sorted, no whitespace,
// values normalised by the axis registry, numbers in shortest round-trip form, written by
// planner/canonical_json.h:
//
//   {"axes":{"attention":"off",...,"tp":1},"experiment":"NAME","model":"REQ",
//    "repeat":R,"workload":"WORKLOAD_DIGEST"}
//
// where WORKLOAD_DIGEST is the SHA-256 hex of the workload's own canonical JSON, and
// "axes" holds only the axes that apply to the workload's kind. The id is the first 32
// hex digits (128 bits) of the SHA-256 of the canonical form. Consequences: the same
// spec gives the same ids everywhere; editing one workload changes only its jobs' ids;
// reordering the spec changes no id.
#pragma once

#include <string>

#include "planner/capabilities.h"
#include "planner/spec.h"

namespace orch::planner {

inline constexpr std::size_t kJobIdHexDigits = 32;
inline constexpr std::size_t kShortJobIdHexDigits = 12;

// {"capture":{...},"kind":"teacher_forced","name":...,"positions":N,"text":...}
std::string CanonicalWorkload(const Workload& workload);
// SHA-256 hex of CanonicalWorkload.
std::string WorkloadDigest(const Workload& workload);
// {"attention":"off",...}: the axes of `coordinate` that apply to `kind`.
std::string CanonicalAxes(const Coordinate& coordinate, WorkloadKind kind);
// The full canonical form above.
std::string CanonicalJob(const std::string& canonical_axes, const std::string& experiment,
                         const std::string& model, int repeat, const std::string& workload_digest);
std::string JobIdOf(const std::string& canonical_job);

}  // namespace orch::planner
