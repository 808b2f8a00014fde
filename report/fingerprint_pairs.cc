#include "report/fingerprint_pairs.h"

#include <string>

#include "fingerprint/canonical_json.h"

namespace orch::report {
namespace {

Result<fingerprint::Fingerprint> Load(RunSource& source, const std::string& id) {
  if (id.empty()) return NotFound("no fingerprint recorded");
  ORCH_ASSIGN_OR_RETURN(std::string json, source.GetFingerprint(id));
  return fingerprint::ParseFingerprintJson(json);
}

FingerprintComparison ComparePair(RunSource& source, std::string kind,
                                  const std::string& reference_id, const std::string& other_id) {
  FingerprintComparison out;
  out.kind = std::move(kind);
  out.reference_id = reference_id;
  out.other_id = other_id;
  out.same = !reference_id.empty() && reference_id == other_id;
  if (out.same) return out;
  if (reference_id.empty() && other_id.empty()) {
    out.note = "not recorded for either run";
    return out;
  }
  Result<fingerprint::Fingerprint> a = Load(source, reference_id);
  Result<fingerprint::Fingerprint> b = Load(source, other_id);
  if (!a.ok() || !b.ok()) {
    out.note = !a.ok() ? "reference: " + a.status().message() : "other: " + b.status().message();
    return out;
  }
  out.differences = fingerprint::Diff(*a, *b).differences;
  return out;
}

}  // namespace

std::vector<FingerprintComparison> CompareFingerprints(RunSource& source,
                                                       const store::RunRecord& reference,
                                                       const store::RunRecord& other) {
  return {
      ComparePair(source, "host", reference.host_fingerprint_id, other.host_fingerprint_id),
      ComparePair(source, "engine", reference.engine_fingerprint_id, other.engine_fingerprint_id)};
}

}  // namespace orch::report
