// The job spec: the part of the plan an Assign carries to an agent as its job_spec,
// {"experiment": NAME, "job": {...}, "workload": {...}, "model": {...}}, where job,
// workload and model are the plan's objects (docs/plan-json.md). The coordinator writes
// it from the document it read once; the agent reads it to build the driver's job
// (docs/driver-protocol.md).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "plan_document/plan_document.h"

namespace orch::plan_document {

struct JobSpec {
  std::string experiment;  // "" when absent or not a string
  // The objects as compact JSON text; "" when absent.
  std::string job;
  std::string workload;
  std::string model;
  // The workload's capture object, with the fields named as job documents name them
  // (a plan written before the rename says "top_k" for top_logits); "" when absent.
  std::string capture;
};

// Compact JSON. The job object has sorted keys and only the fields the document has; the
// workload and model are the objects as submitted (Workload::json, Model::json), or
// written from the typed fields for a document built in memory; the workload is null
// for a job that names none of the document's.
std::string WriteJobSpec(const Document& document, const Job& job);

// InvalidArgument "not a JSON object" when `text` is not one. Never throws.
// The agent sends `capture` once, at the job document's top level (docs/driver-protocol.md).
Result<JobSpec> ReadJobSpec(std::string_view text);

}  // namespace orch::plan_document
