#include "bundle/plan_bundle.h"

#include <sodium.h>

#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"
#include "bundle/bundle_file.h"
#include "bundle/manifest_fields.h"
#include "plan_document/plan_json.h"

namespace orch::bundle {
namespace {

using nlohmann::json;

// The labels of the plan's cells, in plan order.
std::vector<std::string> CellLabels(const plan_document::Document& plan) {
  std::vector<std::string> labels;
  for (const plan_document::Cell& cell : plan.cells) labels.push_back(cell.label);
  return labels;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

Result<plan_document::Document> ReadStoredPlan(std::string_view plan_json) {
  Result<plan_document::Document> plan = plan_document::ReadPlanJson(plan_json);
  if (!plan.ok()) {
    return InvalidArgument("the stored plan is not an orch.plan/1 document: " +
                           plan.status().message());
  }
  return plan;
}

// KeepCells on a document.
Status KeepCellsOf(plan_document::Document& plan, const std::vector<std::string>& cells) {
  if (cells.empty()) return Status::Ok();
  std::vector<std::string> labels = CellLabels(plan);
  for (const std::string& cell : cells) {
    if (std::find(labels.begin(), labels.end(), cell) == labels.end()) {
      return InvalidArgument("the plan has no cell '" + cell + "'; its cells: " + Join(labels));
    }
  }
  std::set<std::string, std::less<>> wanted(cells.begin(), cells.end());
  plan_document::KeepJobs(plan,
                          [&](const plan_document::Job& job) { return wanted.contains(job.cell); });
  std::erase_if(plan.cells,
                [&](const plan_document::Cell& cell) { return !wanted.contains(cell.label); });
  return Status::Ok();
}

}  // namespace

Result<std::string> KeepCells(std::string_view plan_json, const std::vector<std::string>& cells) {
  ORCH_ASSIGN_OR_RETURN(plan_document::Document plan, ReadStoredPlan(plan_json));
  ORCH_RETURN_IF_ERROR(KeepCellsOf(plan, cells));
  return plan_document::WritePlanJson(plan);
}

Result<std::string> ExportPlanBundle(store::Store& store, const ExportOptions& options,
                                     const protocol::SecretIdentity& coordinator) {
  if (options.valid_for_ms <= 0) return InvalidArgument("the validity must be above 0");
  ORCH_ASSIGN_OR_RETURN(store::PlanRecord stored, store.GetPlan(options.experiment));
  ORCH_ASSIGN_OR_RETURN(plan_document::Document plan, ReadStoredPlan(stored.json));
  ORCH_RETURN_IF_ERROR(KeepCellsOf(plan, options.cells));
  json job_ids = json::array();
  for (const plan_document::Job& job : plan.jobs) job_ids.push_back(job.id);
  if (job_ids.empty()) return InvalidArgument("no job of " + options.experiment + " is left");

  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  unsigned char nonce[16];
  randombytes_buf(nonce, sizeof nonce);
  json fields = {
      {"experiment", stored.experiment},
      {"nonce", ToHex(nonce, sizeof nonce)},
      {"created_at_ms", options.now_ms},
      {"expires_at_ms", options.now_ms + options.valid_for_ms},
      {"cells", CellLabels(plan)},
      {"jobs", std::move(job_ids)},
      {"model", plan.model ? json::parse(plan_document::WriteModelJson(*plan.model)) : json()}};
  BundleContent content{
      std::string(kPlanKind), fields.dump(), {{"plan.json", plan_document::WritePlanJson(plan)}}};
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
  Result<std::string> experiment = StringField(manifest, "manifest", "experiment");
  Result<std::string> nonce = StringField(manifest, "manifest", "nonce");
  Result<int64_t> created = IntField(manifest, "manifest", "created_at_ms");
  Result<int64_t> expires = IntField(manifest, "manifest", "expires_at_ms");
  Result<std::vector<std::string>> cells = StringListField(manifest, "manifest", "cells");
  Result<std::vector<std::string>> jobs = StringListField(manifest, "manifest", "jobs");
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
  Result<plan_document::Document> parsed = plan_document::ReadPlanJson(bundle.plan_json);
  if (!parsed.ok()) return fail(InvalidArgument("plan.json: " + parsed.status().message()));
  std::vector<std::string> plan_jobs;
  for (const plan_document::Job& job : parsed->jobs) plan_jobs.push_back(job.id);
  if (plan_jobs != bundle.job_ids) {
    return fail(InvalidArgument("plan.json does not hold the jobs manifest.jobs lists"));
  }
  return bundle;
}

}  // namespace orch::bundle
