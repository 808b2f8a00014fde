// The canonical JSON form of a Fingerprint and the id derived from it.
//
// Canonical: object keys sorted, no whitespace, integers only, invalid UTF-8 replaced by
// U+FFFD, so equal fingerprints give equal bytes on every machine. Known facts are plain
// JSON values; unknown ones are {"unknown": "<reason>"}. Engines are an object keyed by
// name, models an object keyed by file name (the full path when two share a name),
// checkouts keyed by path, backend libraries keyed by file name; GPUs are an array in tool
// order. The top level carries "schema" = kSchemaVersion.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

std::string ToCanonicalJson(const Fingerprint& fingerprint);

// Accepts any JSON text (whitespace, key order) of the current schema. Errors:
// InvalidArgument naming the first problem (syntax, missing field, wrong type, schema).
Result<Fingerprint> ParseFingerprintJson(std::string_view json_text);

// "fp-" + the first 32 hex digits of SHA-256(ToCanonicalJson(fingerprint)).
std::string FingerprintId(const Fingerprint& fingerprint);
// The same id from the canonical JSON text itself (what ToCanonicalJson returned).
std::string FingerprintIdOfJson(std::string_view canonical_json);

}  // namespace orch::fingerprint
