// Diff of two fingerprints: only the fields that differ, grouped, with both values.
//
// The canonical JSON of both fingerprints is walked together; each difference is named by
// its path, e.g. "host.cpu.model_name", "gpu.devices[0].driver_version",
// "engines.llamacpp.checkouts[\"/src/llama.cpp\"].commit". Values are compared whole where
// they stop being comparable field by field: a list of flags, an unknown fact versus a
// known one, or a part present on one side only (reported once, the other side absent).
// Used by `orch fingerprint diff` and by reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

enum class DiffGroup { kHardware, kGpuDriver, kEngine, kModel, kOther };

// "hardware", "gpu_driver", "engine", "model", "other".
std::string DiffGroupName(DiffGroup group);

struct FieldDifference {
  DiffGroup group = DiffGroup::kOther;
  std::string field;             // flattened path
  std::optional<std::string> a;  // canonical JSON of A's value; nullopt when absent
  std::optional<std::string> b;
  friend bool operator==(const FieldDifference&, const FieldDifference&) = default;
};

struct FingerprintDiff {
  std::string a_id;
  std::string b_id;
  std::vector<FieldDifference> differences;  // sorted by group, then field
  bool empty() const { return differences.empty(); }
};

FingerprintDiff Diff(const Fingerprint& a, const Fingerprint& b);

// Plain text for terminals and bug reports: a header with both ids, then one block per
// group. Lists (CPU flags) show what only A and only B have, not both whole lists.
std::string RenderDiffText(const FingerprintDiff& diff);

// Canonical JSON: {"a":id,"b":id,"differences":[{"a":value|null,"b":value|null,
// "field":path,"group":name},...]}.
std::string RenderDiffJson(const FingerprintDiff& diff);

}  // namespace orch::fingerprint
