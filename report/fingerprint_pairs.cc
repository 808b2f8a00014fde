#include "report/fingerprint_pairs.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fingerprint/fingerprint_json.h"

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

// The driver's hello from a run summary ({"hello": {...}, ...}); null when absent. Its
// `session` member (docs/driver-protocol.md: whether the engine was warm, how many jobs it
// ran before) tells what the process had done, not what engine it is: left out.
nlohmann::json HelloOf(const std::string& summary) {
  nlohmann::json parsed = nlohmann::json::parse(summary, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("hello") || !parsed["hello"].is_object())
    return nullptr;
  nlohmann::json hello = parsed["hello"];
  hello.erase("session");
  return hello;
}

// Object members flattened to "a.b" paths; anything else is one value (compact JSON).
void Flatten(const nlohmann::json& value, const std::string& path,
             std::map<std::string, std::string>* out) {
  if (!value.is_object()) {
    (*out)[path] = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  for (const auto& [key, member] : value.items()) Flatten(member, path + "." + key, out);
}

FingerprintComparison CompareHellos(const store::RunRecord& reference,
                                    const store::RunRecord& other) {
  FingerprintComparison out;
  out.kind = "engine";
  nlohmann::json a = HelloOf(reference.summary);
  nlohmann::json b = HelloOf(other.summary);
  if (a.is_null() && b.is_null()) {
    out.note = "not recorded for either run";
    return out;
  }
  out.reference_id = out.other_id = "driver hello";
  std::map<std::string, std::string> fields_a, fields_b;
  if (!a.is_null()) Flatten(a, "hello", &fields_a);
  if (!b.is_null()) Flatten(b, "hello", &fields_b);
  std::map<std::string, std::string> all = fields_a;
  all.insert(fields_b.begin(), fields_b.end());
  for (const auto& [field, unused] : all) {
    auto in_a = fields_a.find(field);
    auto in_b = fields_b.find(field);
    std::optional<std::string> va, vb;
    if (in_a != fields_a.end()) va = in_a->second;
    if (in_b != fields_b.end()) vb = in_b->second;
    if (va != vb) out.differences.push_back({fingerprint::DiffGroup::kEngine, field, va, vb});
  }
  out.same = out.differences.empty();
  return out;
}

}  // namespace

std::vector<FingerprintComparison> CompareFingerprints(RunSource& source,
                                                       const store::RunRecord& reference,
                                                       const store::RunRecord& other) {
  FingerprintComparison engine =
      reference.engine_fingerprint_id.empty() && other.engine_fingerprint_id.empty()
          ? CompareHellos(reference, other)
          : ComparePair(source, "engine", reference.engine_fingerprint_id,
                        other.engine_fingerprint_id);
  return {ComparePair(source, "host", reference.host_fingerprint_id, other.host_fingerprint_id),
          std::move(engine)};
}

}  // namespace orch::report
