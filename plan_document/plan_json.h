// Plan JSON text <-> Document (plan_document.h), the only code that reads or writes it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "plan_document/plan_document.h"

namespace orch::plan_document {

// Reads an orch.plan/1 text in one pass without building a tree of the whole text: each
// top-level member, and each job, is a small tree at a time, so reading costs about the
// typed result, not ten times the text. InvalidArgument "plan.FIELD: RULE" naming the
// first field of a wrong type ("plan.jobs[3].requirements.gpus: must be an integer in
// [0, 4096], got \"x\""), a missing required field (schema, experiment.name, workloads,
// jobs, a job's id and workload), or more than kMaxJobs jobs or kMaxWorkloads
// workloads. A job naming no workload of the document is read (Job::unknown_workload):
// whether that is an error is the consumer's call. Never throws.
Result<Document> ReadPlanJson(std::string_view text);

// The experiment's name, read without reading the rest (it stops there); "" when the
// text is not JSON or has none.
std::string ExperimentNameOf(std::string_view text);

// The document as `orch plan --json` prints it: 2-space indent, the key order of
// docs/plan-json.md, a trailing newline. Reading it back gives an equal document.
std::string WritePlanJson(const Document& document);

// The document's `model` member alone, compact (a plan bundle's manifest carries it).
std::string WriteModelJson(const Model& model);

}  // namespace orch::plan_document
