// Plain-text rendering of one fingerprint for `orch fingerprint` without --json: the id,
// then every field as "path: value", grouped like the diff (diff.h).
#pragma once

#include <string>

#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

std::string RenderFingerprintText(const Fingerprint& fingerprint);

}  // namespace orch::fingerprint
