// The fingerprint class of a run: an id over exactly the facts that should make two runs
// of one coordinate bit-identical, so that runs on identical machines (two nodes of one
// model, a lab box and a contributor's copy of it) share it.
//
// Included: what selects the arithmetic (CPU identity and instruction flags, logical
// processor count, glibc release, GPU models, compute capabilities, driver and CUDA/ROCm
// versions, MIG mode; engine executable and backend library hashes, engine metadata,
// checkout commits and dirtiness; model file hashes; the driver's hello minus its local
// paths). Left out: what varies between identical machines (memory size, microcode, NUMA,
// OS name, kernel, virtualization, GPU UUIDs, PCI ids, clocks, power limits, VBIOS, ECC,
// install paths, branch names, the reasons of unknown facts). docs/fingerprint.md gives
// the field list and the reasoning for each.
#pragma once

#include <string>
#include <string_view>

#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

// What a run's class is computed from. Every part may be absent; an absent part adds
// nothing, so callers decide whether a class without a host is meaningful.
struct RunClassFacts {
  const Fingerprint* host = nullptr;    // borrowed; the run's host fingerprint
  const Fingerprint* engine = nullptr;  // borrowed; the run's engine fingerprint, if recorded
  // The driver the run used (the agent's summary "driver"): when a fingerprint has an
  // engine of that name, only that engine counts, so an agent configured with more drivers
  // than another is not another class for it. Empty, or no such engine: all engines.
  std::string driver = {};
  std::string hello_json = {};    // the driver's hello frame (JSON text); empty when none
  std::string model_sha256 = {};  // the model file the driver loaded; empty when unknown
};

// Canonical JSON of exactly the class fields (sorted keys; unknown facts as
// {"unknown": true}, whatever the reason).
std::string RunClassJson(const RunClassFacts& facts);

// "fc-" + the first 32 hex digits of SHA-256(RunClassJson(facts)).
std::string RunClassId(const RunClassFacts& facts);

// The class of a fingerprint alone (the host fingerprint of a run with nothing else known).
std::string FingerprintClassId(const Fingerprint& fingerprint);

}  // namespace orch::fingerprint
