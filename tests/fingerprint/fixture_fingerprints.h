// Whole fingerprints built from the testdata fixture trees, for golden and id tests.
#pragma once

#include <string>

#include "fingerprint/fingerprint.h"

namespace orch::fingerprint::testing {

// Host and GPU facts probed from testdata/<fixture> (nvidia-smi answered from the
// fixture's recorded output when it has one), plus a llama.cpp engine and one model given
// as values so that no machine-specific path enters the result. `engine_commit` varies
// the engine between fixtures.
Fingerprint FixtureFingerprint(const std::string& fixture, const std::string& engine_commit);

// The two fingerprints the golden files describe.
Fingerprint SapphireRapidsFingerprint();
Fingerprint H100BoxFingerprint();

// Compares `actual` with testdata/golden/<name>; with ORCH_UPDATE_GOLDEN=1 in the
// environment, rewrites the golden file instead.
void ExpectGolden(const std::string& name, const std::string& actual);

}  // namespace orch::fingerprint::testing
