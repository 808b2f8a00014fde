#include "report/provenance.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "fingerprint/fingerprint_json.h"

namespace orch::report {
namespace {

using PlainJson = nlohmann::json;

std::string Member(const PlainJson& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void See(std::vector<SeenValue>& seen, const std::string& value, const std::string& cell) {
  if (value.empty()) return;
  auto it = std::find_if(seen.begin(), seen.end(),
                         [&value](const SeenValue& v) { return v.value == value; });
  if (it == seen.end()) it = seen.insert(seen.end(), SeenValue{value, {}});
  if (std::find(it->cells.begin(), it->cells.end(), cell) == it->cells.end()) {
    it->cells.push_back(cell);
  }
}

std::string EngineOf(const PlainJson& hello) {
  const std::string version = Member(hello, "version");
  if (version.empty()) return "";
  std::string out = Member(hello, "engine");
  out += (out.empty() ? "" : " ") + version;
  const std::string commit = Member(hello, "commit");
  return commit.empty() ? out : out + " (commit " + commit + ")";
}

std::string ModelFileOf(const PlainJson& done) {
  const PlainJson model = done.is_object() ? done.value("model", PlainJson()) : PlainJson();
  const std::string sha = Member(model, "sha256");
  if (sha.empty()) return "";
  const std::string type = Member(model, "type");
  return (type.empty() ? "" : type + " ") + "sha256:" + sha;
}

// The CPU of a host: from its stored fingerprint, else what the driver saw.
std::string CpuOf(RunSource& source, const store::RunRecord& run, const PlainJson& hello) {
  if (!run.host_fingerprint_id.empty()) {
    Result<std::string> json = source.GetFingerprint(run.host_fingerprint_id);
    Result<fingerprint::Fingerprint> fp =
        json.ok() ? fingerprint::ParseFingerprintJson(*json) : json.status();
    if (fp.ok() && fp->host.cpu.model_name.known()) return fp->host.cpu.model_name.value();
  }
  return Member(hello, "hardware");
}

std::string HostOf(RunSource& source, const store::RunRecord& run, const PlainJson& hello) {
  std::string out = run.agent_id.empty() ? "unknown agent" : run.agent_id;
  const std::string cpu = CpuOf(source, run, hello);
  if (!cpu.empty()) out += ": " + cpu;
  if (!run.host_fingerprint_id.empty()) out += " (fingerprint " + run.host_fingerprint_id + ")";
  return out;
}

}  // namespace

Provenance CollectProvenance(const PlanView& plan, const std::vector<store::RunRecord>& runs,
                             RunSource& source) {
  Provenance out{plan.model.name, plan.model.id, {}, plan.baseline, {}, {}};
  std::map<std::string, std::string> cell_of_job;
  for (const PlannedJob& job : plan.jobs) cell_of_job[job.id] = job.cell;
  for (const PlannedCell& cell : plan.cells) {
    for (const store::RunRecord& run : runs) {
      auto job = cell_of_job.find(run.job_id);
      if (run.state != store::RunState::kSucceeded || job == cell_of_job.end() ||
          job->second != cell.label) {
        continue;
      }
      const PlainJson summary = PlainJson::parse(run.summary, nullptr, /*allow_exceptions=*/false);
      const PlainJson hello =
          summary.is_object() ? summary.value("hello", PlainJson()) : PlainJson();
      See(out.hosts, HostOf(source, run, hello), cell.label);
      See(out.engines, EngineOf(hello), cell.label);
      See(out.model_files,
          ModelFileOf(summary.is_object() ? summary.value("done", PlainJson()) : PlainJson()),
          cell.label);
    }
  }
  return out;
}

}  // namespace orch::report
