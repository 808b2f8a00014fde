// Internal to planner/: the parsers of the spec's sections, each reporting into the
// shared Diagnostics through TomlFields. spec_parser.cc drives them.
#pragma once

#include <string>
#include <vector>

#include "planner/spec.h"
#include "planner/spec_parser.h"
#include "planner/toml_fields.h"

namespace orch::planner {

// Experiment and workload names: 1-128 letters, digits, '-', '_' or '.', not only dots
// (what the coordinator accepts, coordinator/plan_catalog.h).
bool IsName(const std::string& text);

// [[workloads]]: at least one; names unique; text_file and cases_file read through
// `reader`; a task workload goes to `tasks` and its cases to the workloads returned.
std::vector<Workload> ParseWorkloads(const toml::table& root, SourceReader& reader,
                                     TomlFields& fields, std::vector<TaskWorkload>& tasks);

// [baseline] and [alternatives], with dotted keys ("sampler.seed") flattened; or [bisect],
// whose from is the baseline and whose to gives the alternatives (set in `bisect`).
std::vector<Axis> ParseAxes(const toml::table& root, TomlFields& fields,
                            std::optional<BisectSpec>& bisect);

}  // namespace orch::planner
