// Flattening a fingerprint into (group, field path, value) rows: the common ground of the
// diff (diff.h) and the text rendering (fingerprint_text.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fingerprint/diff.h"
#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

struct FlatField {
  DiffGroup group = DiffGroup::kOther;
  std::string path;   // "host.cpu.flags", "gpu.devices[1].uuid"
  std::string value;  // canonical JSON of the leaf
  // For a leaf that is a list of plain values (CPU flags): each element as canonical JSON.
  std::optional<std::vector<std::string>> items;
};

// Leaves are scalars, lists of scalars and unknown markers ({"unknown": reason}); empty
// objects and lists are leaves too. Rows come sorted by path.
std::vector<FlatField> FlattenFingerprint(const Fingerprint& fingerprint);

// A leaf's canonical JSON as a person reads it: strings without quotes, lists as
// space-separated items, {"unknown": reason} as "unknown (reason)", absent as "(absent)".
std::string DisplayValue(const std::optional<std::string>& canonical_json);

// The path of member `key` below `path`: "engines" + "llamacpp" -> "engines.llamacpp";
// keys other than [A-Za-z0-9_-]+ are quoted: "models" + "q4.gguf" -> models["q4.gguf"].
std::string ChildPath(const std::string& path, const std::string& key);

// The group a top-level section belongs to: host -> hardware, gpu -> gpu_driver,
// engines -> engine, models -> model, anything else -> other.
DiffGroup GroupOfPath(const std::string& path);

}  // namespace orch::fingerprint
