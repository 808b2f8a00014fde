#include "bundle/plan_bundle.h"

#include <sodium.h>

#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"
#include "bundle/bundle_file.h"

namespace orch::bundle {
namespace {

using nlohmann::json;

// The labels of the plan's cells, in plan order.
std::vector<std::string> CellLabels(const json& plan) {
  std::vector<std::string> labels;
  if (!plan.contains("cells") || !plan.at("cells").is_array()) return labels;
  for (const json& cell : plan.at("cells")) {
    if (cell.is_object() && cell.contains("label") && cell.at("label").is_string()) {
      labels.push_back(cell.at("label").get<std::string>());
    }
  }
  return labels;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

Result<std::string> StringField(const json& object, const char* field) {
  if (!object.contains(field) || !object.at(field).is_string()) {
    return InvalidArgument(std::string("manifest.") + field + " missing or not a string");
  }
  return object.at(field).get<std::string>();
}

Result<int64_t> IntField(const json& object, const char* field) {
  if (!object.contains(field) || !object.at(field).is_number_integer()) {
    return InvalidArgument(std::string("manifest.") + field + " missing or not an integer");
  }
  return object.at(field).get<int64_t>();
}

Result<std::vector<std::string>> StringList(const json& object, const char* field) {
  if (!object.contains(field) || !object.at(field).is_array()) {
    return InvalidArgument(std::string("manifest.") + field + " missing or not a list");
  }
  std::vector<std::string> out;
  for (const json& item : object.at(field)) {
    if (!item.is_string()) return InvalidArgument(std::string("manifest.") + field + ": not text");
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

Result<std::string> KeepCells(std::string_view plan_json, const std::vector<std::string>& cells) {
  json plan = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (!plan.is_object() || !plan.contains("jobs") || !plan.at("jobs").is_array()) {
    return InvalidArgument("the stored plan is not an orch.plan/1 document");
  }
  if (cells.empty()) return plan.dump(2) + "\n";
  std::vector<std::string> labels = CellLabels(plan);
  std::set<std::string> wanted(cells.begin(), cells.end());
  for (const std::string& cell : cells) {
    if (std::find(labels.begin(), labels.end(), cell) == labels.end()) {
      return InvalidArgument("the plan has no cell '" + cell + "'; its cells: " + Join(labels));
    }
  }
  json jobs = json::array();
  for (const json& job : plan.at("jobs")) {
    if (job.is_object() && job.contains("cell") && job.at("cell").is_string() &&
        wanted.contains(job.at("cell").get<std::string>())) {
      jobs.push_back(job);
    }
  }
  json kept_cells = json::array();
  for (const json& cell : plan.at("cells")) {
    if (cell.is_object() && cell.contains("label") && cell.at("label").is_string() &&
        wanted.contains(cell.at("label").get<std::string>())) {
      kept_cells.push_back(cell);
    }
  }
  plan["jobs"] = std::move(jobs);
  plan["cells"] = std::move(kept_cells);
  return plan.dump(2) + "\n";
}

Result<std::string> ExportPlanBundle(store::Store& store, const ExportOptions& options,
                                     const protocol::SecretIdentity& coordinator) {
  if (options.valid_for_ms <= 0) return InvalidArgument("the validity must be above 0");
  ORCH_ASSIGN_OR_RETURN(store::PlanRecord plan, store.GetPlan(options.experiment));
  ORCH_ASSIGN_OR_RETURN(std::string plan_json, KeepCells(plan.json, options.cells));
  json parsed = json::parse(plan_json);
  json job_ids = json::array();
  for (const json& job : parsed.at("jobs")) job_ids.push_back(job.value("id", ""));
  if (job_ids.empty()) return InvalidArgument("no job of " + options.experiment + " is left");

  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  unsigned char nonce[16];
  randombytes_buf(nonce, sizeof nonce);
  json fields = {{"experiment", plan.id},
                 {"nonce", ToHex(nonce, sizeof nonce)},
                 {"created_at_ms", options.now_ms},
                 {"expires_at_ms", options.now_ms + options.valid_for_ms},
                 {"cells", CellLabels(parsed)},
                 {"jobs", std::move(job_ids)},
                 {"model", parsed.contains("model") ? parsed.at("model") : json()}};
  BundleContent content{std::string(kPlanKind), fields.dump(), {{"plan.json", plan_json}}};
  return WriteBundle(content, coordinator);
}

Result<PlanBundle> ReadPlanBundle(std::string_view bytes, std::string_view file,
                                  const ReadOptions& read) {
  ORCH_ASSIGN_OR_RETURN(OpenedBundle opened, ReadBundle(bytes, file, read));
  auto fail = [&](const Status& status) {
    return InvalidArgument("plan bundle " + std::string(file) + ": " + status.message());
  };
  if (opened.kind != kPlanKind) {
    return fail(InvalidArgument("it is a " + opened.kind + " bundle, not a plan bundle"));
  }
  json manifest = json::parse(opened.manifest_json);  // ReadBundle parsed it already
  PlanBundle bundle;
  bundle.sha256 = opened.sha256;
  bundle.coordinator = opened.signer;
  bundle.file = std::string(bytes);
  Result<std::string> experiment = StringField(manifest, "experiment");
  Result<std::string> nonce = StringField(manifest, "nonce");
  Result<int64_t> created = IntField(manifest, "created_at_ms");
  Result<int64_t> expires = IntField(manifest, "expires_at_ms");
  Result<std::vector<std::string>> cells = StringList(manifest, "cells");
  Result<std::vector<std::string>> jobs = StringList(manifest, "jobs");
  for (const Status& s : {experiment.status(), nonce.status(), created.status(), expires.status(),
                          cells.status(), jobs.status()}) {
    if (!s.ok()) return fail(s);
  }
  const Blob* plan = opened.Find("plan.json");
  if (plan == nullptr) return fail(InvalidArgument("it has no plan.json blob"));
  bundle.experiment = *experiment;
  bundle.nonce = *nonce;
  bundle.created_at_ms = *created;
  bundle.expires_at_ms = *expires;
  bundle.cells = std::move(*cells);
  bundle.job_ids = std::move(*jobs);
  bundle.plan_json = plan->data;
  // The plan's own jobs must be the ones the manifest lists.
  json parsed = json::parse(bundle.plan_json, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> plan_jobs;
  if (parsed.is_object() && parsed.contains("jobs") && parsed.at("jobs").is_array()) {
    for (const json& job : parsed.at("jobs")) {
      if (job.is_object() && job.contains("id") && job.at("id").is_string()) {
        plan_jobs.push_back(job.at("id").get<std::string>());
      }
    }
  }
  if (plan_jobs != bundle.job_ids) {
    return fail(InvalidArgument("plan.json does not hold the jobs manifest.jobs lists"));
  }
  return bundle;
}

}  // namespace orch::bundle
