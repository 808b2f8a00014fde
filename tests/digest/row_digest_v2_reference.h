// A frozen, scalar copy of digest v2 (digest/row_pass_v2.cc, docs/metrics.md
// "Digest versions"), written from its definition one element at a time: the
// oracle that every vector variant of v2 must match bit for bit. Never edit it
// to match a new implementation; different bits are a new digest version.
#pragma once

#include <span>

#include "digest/row_digest.h"

namespace orch::digest::testing {

// The v2 digest of `row`; options.version is ignored. The request must be
// valid (ValidateDigestRequest).
RowDigest ReferenceRowDigestV2(std::span<const float> row, const DigestOptions& options);

}  // namespace orch::digest::testing
