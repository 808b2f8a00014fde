// The non-axis fields of a job document (docs/driver-protocol.md, "The job"): their
// limits and defaults, defined once. The planner checks a spec against them (so a plan
// holds nothing a driver refuses), the C++ drivers read the job with them, and the
// Python SDK carries the same table in drivers/python/orch_driver/job_fields.py, which
// tests/plan_document/job_fields_test.cc keeps equal to JobIntegerFields().
//
// capture.top_logits is bounded by what the digest library keeps of a row
// (digest::kMaxTopK; drivers/llamacpp/digest_pipeline.cc asserts the two are equal).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::plan_document {

// An integer field of the job document: its path from the document's root, the
// inclusive range a value must lie in, and the value an absent field takes.
struct IntegerField {
  std::string_view path;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::int64_t fallback = 0;
};

// Logits (ids and values) kept per position: the workload's capture.top_logits.
inline constexpr IntegerField kTopLogits{"capture.top_logits", 1, 1024, 20};
// A full row every N positions (0 = never); at most the positions a workload may have.
inline constexpr IntegerField kFullEvery{"capture.full_every", 0, std::int64_t{1} << 24, 0};
// Bytes of full rows a run may keep to make every position exact (0 = never by budget).
inline constexpr IntegerField kFullRowBudgetBytes{"capture.full_row_budget_bytes", 0,
                                                  std::int64_t{4} << 30, std::int64_t{64} << 20};
// The agent's share of the machine (AgentConfig::driver_threads); drivers clamp larger
// values to `max` rather than refuse them, as the agent may run on a larger machine.
inline constexpr IntegerField kResourceThreads{"resources.threads", 0, 4096, 0};

// The field the capture's top_logits had before it was renamed (it shared the sampler's
// name); plan documents written before still carry it, job documents and specs never.
inline constexpr std::string_view kFormerTopLogitsKey = "top_k";

// Every field above, in the order the Python SDK's table lists them.
const std::vector<IntegerField>& JobIntegerFields();

// InvalidArgument "PATH: expected MIN to MAX, got VALUE" when `value` is out of the
// field's range; `where` replaces the field's path in the message when not empty.
Status CheckRange(const IntegerField& field, std::int64_t value, std::string_view where = {});

}  // namespace orch::plan_document
