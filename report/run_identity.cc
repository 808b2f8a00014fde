#include "report/run_identity.h"

#include <nlohmann/json.hpp>

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/fingerprint_class.h"
#include "report/job_runs.h"

namespace orch::report {
namespace {

using nlohmann::json;

// What the agent's run summary ({"driver", "hello", "done", ...}) adds to the class: the
// driver's name, its hello, and the model file it loaded. Absent parts stay empty.
void AddSummary(const std::string& summary, fingerprint::RunClassFacts& facts) {
  json parsed = json::parse(summary, nullptr, false);
  if (!parsed.is_object()) return;
  if (parsed.contains("driver") && parsed["driver"].is_string()) {
    facts.driver = parsed["driver"].get<std::string>();
  }
  if (parsed.contains("hello") && parsed["hello"].is_object()) {
    facts.hello_json = parsed["hello"].dump(-1, ' ', false, json::error_handler_t::replace);
  }
  const json* done = parsed.contains("done") ? &parsed["done"] : nullptr;
  if (done != nullptr && done->is_object() && done->contains("model") &&
      (*done)["model"].is_object() && (*done)["model"].contains("sha256") &&
      (*done)["model"]["sha256"].is_string()) {
    facts.model_sha256 = (*done)["model"]["sha256"].get<std::string>();
  }
}

}  // namespace

RunIdentity RunIdentities::Of(const store::RunRecord& run) {
  RunIdentity out{run.id, run.job_id, run.agent_id, ContributorOf(run), run.host_fingerprint_id,
                  ""};
  const fingerprint::Fingerprint* host = Load(run.host_fingerprint_id);
  if (host == nullptr) return out;
  fingerprint::RunClassFacts facts{.host = host, .engine = Load(run.engine_fingerprint_id)};
  AddSummary(run.summary, facts);
  out.fingerprint_class = fingerprint::RunClassId(facts);
  return out;
}

const fingerprint::Fingerprint* RunIdentities::Load(const std::string& id) {
  if (id.empty()) return nullptr;
  auto [it, inserted] = fingerprints_.try_emplace(id);
  if (inserted) {
    Result<std::string> json_text = source_.GetFingerprint(id);
    if (json_text.ok()) {
      Result<fingerprint::Fingerprint> parsed = fingerprint::ParseFingerprintJson(*json_text);
      if (parsed.ok()) it->second = std::move(*parsed);
    }
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace orch::report
