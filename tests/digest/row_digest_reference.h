// A frozen copy of the row digest as first released, kept as the oracle for
// the digest's bit-for-bit stability contract ("the same row gives the same
// digest on every machine"): any change to digest/row_digest.cc must keep every
// field of every row equal to what this copy computes. Never edit the copy to
// match a new implementation; a digest that needs different bits is a new
// digest version, not an optimisation.
#pragma once

#include <span>

#include "digest/row_digest.h"

namespace orch::digest::testing {

// The digest of `row` as the released implementation computed it. The request
// must be valid (ValidateDigestRequest).
RowDigest ReferenceRowDigest(std::span<const float> row, const DigestOptions& options);

}  // namespace orch::digest::testing
