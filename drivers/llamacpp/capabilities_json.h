// The llama.cpp driver's capability declaration: the axis table and the
// combination rules of job_axes.h as one JSON document (schema
// "orch.capabilities/1", docs/drivers.md "Capability declaration").
//
// `orch-driver-llamacpp-REL capabilities --json` prints it; the planner embeds
// the same text from planner/declarations/llama.cpp.json, and a test fails when
// the two differ. Pure and deterministic: the same driver source always gives
// the same bytes, whatever engine build it is compiled against.
#pragma once

#include <string>

namespace orch::drivers::llamacpp {

// The declaration, pretty-printed with two-space indents and a final newline.
std::string CapabilitiesJson();

}  // namespace orch::drivers::llamacpp
