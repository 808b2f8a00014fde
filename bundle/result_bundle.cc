#include "bundle/result_bundle.h"

#include <nlohmann/json.hpp>
#include <set>

#include "bundle/bundle_file.h"
#include "bundle/manifest_fields.h"
#include "fingerprint/fingerprint_json.h"
#include "protocol/peer_names.h"

namespace orch::bundle {
namespace {

using nlohmann::json;

constexpr size_t kMaxRunIdBytes = 190;  // leaves room for the contributor's name

void PutBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

uint64_t GetBigEndian(std::string_view in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(in[at + i]);
  return value;
}

// A run's digests as one blob: per record, be64 position, be32 length, the bytes.
std::string EncodeDigests(const std::vector<store::DigestRecord>& records) {
  std::string out;
  for (const store::DigestRecord& record : records) {
    PutBigEndian(out, record.position, 8);
    PutBigEndian(out, record.bytes.size(), 4);
    out.append(record.bytes);
  }
  return out;
}

// The records of a digests blob; positions must increase strictly, bytes be non-empty.
Result<std::vector<store::DigestRecord>> DecodeDigests(std::string_view blob) {
  std::vector<store::DigestRecord> records;
  size_t at = 0;
  while (at < blob.size()) {
    if (blob.size() - at < 12) return InvalidArgument("a digest record is cut off");
    uint64_t position = GetBigEndian(blob, at, 8);
    uint64_t size = GetBigEndian(blob, at + 8, 4);
    at += 12;
    if (size == 0 || size > blob.size() - at) {
      return InvalidArgument("digest record at position " + std::to_string(position) +
                             " has a bad length");
    }
    if (!records.empty() && position <= records.back().position) {
      return InvalidArgument("digest positions do not increase at " + std::to_string(position));
    }
    records.push_back({position, std::string(blob.substr(at, size))});
    at += size;
  }
  return records;
}

// The run of `job` the rig's store holds that a result bundle carries: its current run
// when that one is usable, else its first usable one; nullptr when none is.
const store::RunRecord* UsableRun(const store::JobRecord& job,
                                  const std::vector<store::RunRecord>& runs) {
  const store::RunRecord* chosen = nullptr;
  for (const store::RunRecord& run : runs) {
    if (run.job_id != job.id || run.state != store::RunState::kSucceeded || !run.Complete()) {
      continue;
    }
    if (chosen == nullptr || run.id == job.current_run_id) chosen = &run;
  }
  return chosen;
}

Status Refused(std::string_view file, const std::string& why) {
  return InvalidArgument("result bundle " + std::string(file) + ": " + why);
}

// The fields of one entry of manifest.runs, checked.
struct RunEntry {
  std::string run_id, job_id, agent_id, host_fingerprint, summary_blob, digests_blob,
      fingerprint_blob;
  int32_t exit_status = 0;
};

Result<RunEntry> ReadRunEntry(const json& entry, size_t index) {
  std::string where = "manifest.runs[" + std::to_string(index) + "]";
  if (!entry.is_object()) return InvalidArgument(where + " is not an object");
  RunEntry run;
  for (auto [field, out] :
       {std::pair{"run", &run.run_id}, std::pair{"job", &run.job_id},
        std::pair{"agent", &run.agent_id}, std::pair{"host_fingerprint", &run.host_fingerprint},
        std::pair{"summary", &run.summary_blob}, std::pair{"digests", &run.digests_blob},
        std::pair{"fingerprint", &run.fingerprint_blob}}) {
    ORCH_ASSIGN_OR_RETURN(*out, StringField(entry, where, field));
  }
  // Both become parts of ids in the lab's store: names like every other, no paths.
  if (!protocol::ValidPeerName(run.run_id) || run.run_id.size() > kMaxRunIdBytes) {
    return InvalidArgument(where + ".run '" + run.run_id + "' is not a valid run id (1.." +
                           std::to_string(kMaxRunIdBytes) + " bytes of [A-Za-z0-9._:@-])");
  }
  if (!protocol::ValidPeerName(run.agent_id)) {
    return InvalidArgument(where + ".agent '" + run.agent_id +
                           "' is not a valid agent id (1..200 bytes of [A-Za-z0-9._:@-])");
  }
  if (entry.contains("exit_status") && entry.at("exit_status").is_number_integer()) {
    run.exit_status = entry.at("exit_status").get<int32_t>();
  }
  if (!entry.contains("state") || entry.at("state") != "succeeded") {
    return InvalidArgument(where + ".state must be succeeded");
  }
  return run;
}

const Blob* NeedBlob(const OpenedBundle& opened, const std::string& name, Status& error) {
  const Blob* blob = opened.Find(name);
  if (blob == nullptr) error = InvalidArgument("blob " + name + " is missing");
  return blob;
}

// The manifest fields a result bundle adds (WriteResultBundle).
struct ResultManifest {
  std::uint64_t sequence = 0;
  std::string experiment;
  std::string nonce;
  const json* runs = nullptr;  // manifest.runs, into `parsed`
  json parsed;
};

// A run the bundle carries, read and checked against the bundle alone.
struct BundledRun {
  RunEntry entry;
  std::string summary;
  std::vector<store::DigestRecord> records;
  std::string fingerprint_json;  // "" when the run names no host fingerprint
};

// The bundle's signature, its signer's trust and its kind.
Result<OpenedBundle> OpenResultBundle(std::string_view bytes, std::string_view file,
                                      const ImportContext& context) {
  ReadOptions read;
  read.max_bundle_bytes = context.max_bundle_bytes;
  read.trust = [&](const protocol::PublicIdentity& signer) {
    Status trusted =
        TrustedSigner(signer, context.trusted, context.trust_hint, context.other_roles);
    if (trusted.ok()) return trusted;
    return Status(trusted.code(), "result bundle " + std::string(file) + ": " + trusted.message());
  };
  ORCH_ASSIGN_OR_RETURN(OpenedBundle opened, ReadBundle(bytes, file, read));
  if (opened.kind != kResultKind) {
    return Refused(file, "it is a " + opened.kind + " bundle, not a result bundle");
  }
  return opened;
}

Result<ResultManifest> ReadResultManifest(const OpenedBundle& opened, std::string_view file) {
  ResultManifest manifest;
  manifest.parsed = json::parse(opened.manifest_json);  // ReadBundle parsed it already
  Result<std::uint64_t> sequence = UnsignedField(manifest.parsed, "manifest", "sequence");
  Result<std::string> experiment = StringField(manifest.parsed, "manifest", "experiment");
  Result<std::string> nonce = StringField(manifest.parsed, "manifest", "nonce");
  Result<const json*> runs = ListField(manifest.parsed, "manifest", "runs");
  for (const Status& s : {sequence.status(), experiment.status(), nonce.status(), runs.status()}) {
    if (!s.ok()) return Refused(file, s.message());
  }
  manifest.sequence = *sequence;
  manifest.experiment = *experiment;
  manifest.nonce = *nonce;
  manifest.runs = *runs;
  return manifest;
}

// The plan bundle the result bundle answers: issued by this coordinator, for this
// experiment, not expired, and the importing user may add to the experiment.
Result<PlanBundle> VerifyAnsweredPlan(const OpenedBundle& opened, const ResultManifest& manifest,
                                      std::string_view file, const ImportContext& context) {
  const Blob* plan_blob = opened.Find("plan-bundle");
  if (plan_blob == nullptr) return Refused(file, "it carries no plan bundle");
  // Its signer must be this coordinator before anything of it is inflated.
  ReadOptions plan_read;
  plan_read.max_bundle_bytes = context.max_bundle_bytes;
  plan_read.trust = [&](const protocol::PublicIdentity& signer) {
    if (signer.sign_public == context.coordinator_key) return Status::Ok();
    return Status(StatusCode::kFailedPrecondition,
                  "result bundle " + std::string(file) + ": its plan bundle was signed by " +
                      signer.name + " (ed25519 " + signer.sign_public +
                      "), not by this coordinator");
  };
  Result<PlanBundle> plan =
      ReadPlanBundle(plan_blob->data, std::string(file) + ":plan-bundle", plan_read);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kFailedPrecondition) return plan.status();
    return Refused(file, plan.status().message());
  }
  if (manifest.parsed.contains("plan_bundle_sha256") &&
      manifest.parsed.at("plan_bundle_sha256") != plan->sha256) {
    return Refused(file,
                   "manifest.plan_bundle_sha256 is not the hash of the plan bundle it "
                   "carries");
  }
  if (plan->nonce != manifest.nonce || plan->experiment != manifest.experiment) {
    return Refused(file, "its nonce or experiment is not that of the plan bundle it carries");
  }
  if (context.now_ms > plan->expires_at_ms) {
    return Status(StatusCode::kFailedPrecondition,
                  "result bundle " + std::string(file) + ": the plan bundle it answers (nonce " +
                      manifest.nonce + ") expired " +
                      std::to_string((context.now_ms - plan->expires_at_ms) / 1000) +
                      " s ago; export a new one (orch export " + manifest.experiment + ")");
  }
  if (context.may_import && !context.may_import(manifest.experiment)) {
    return Status(StatusCode::kFailedPrecondition, "result bundle " + std::string(file) +
                                                       ": only an admin or the key that "
                                                       "submitted " +
                                                       manifest.experiment + " may import into it");
  }
  return std::move(plan).value();
}

// One manifest.runs entry and its blobs, checked: a job of the plan bundle, once;
// its summary and digests present, the digests well formed and as many as the
// manifest says; its host fingerprint's id the hash of the fingerprint it carries.
Result<BundledRun> ReadBundledRun(const OpenedBundle& opened, const json& item, std::size_t index,
                                  const std::set<std::string>& plan_jobs,
                                  std::set<std::string>& seen_jobs) {
  ORCH_ASSIGN_OR_RETURN(RunEntry entry, ReadRunEntry(item, index));
  std::string where = "run " + entry.run_id + " (job " + entry.job_id + ")";
  auto refused = [&](const std::string& why) { return InvalidArgument(where + ": " + why); };
  if (!plan_jobs.contains(entry.job_id)) return refused("the plan bundle has no such job");
  if (!seen_jobs.insert(entry.job_id).second) return refused("a second run of the same job");
  Status missing;
  const Blob* summary = NeedBlob(opened, entry.summary_blob, missing);
  const Blob* digests = NeedBlob(opened, entry.digests_blob, missing);
  if (!missing.ok()) return refused(missing.message());
  Result<std::vector<store::DigestRecord>> records = DecodeDigests(digests->data);
  if (!records.ok()) return refused(records.status().message());
  if (records->empty()) return refused("it has no digests");
  if (item.contains("positions") &&
      item.at("positions") != static_cast<uint64_t>(records->size())) {
    return refused("manifest says " + item.at("positions").dump() +
                   " positions, its digests hold " + std::to_string(records->size()));
  }
  BundledRun run{std::move(entry), summary->data, std::move(records).value(), ""};
  if (!run.entry.host_fingerprint.empty()) {
    const Blob* fingerprint = NeedBlob(opened, run.entry.fingerprint_blob, missing);
    if (!missing.ok()) return refused(missing.message());
    if (fingerprint::FingerprintIdOfJson(fingerprint->data) != run.entry.host_fingerprint) {
      return refused("its host fingerprint's id is not the hash of its JSON");
    }
    run.fingerprint_json = fingerprint->data;
  }
  return run;
}

Result<std::vector<BundledRun>> ReadBundledRuns(const OpenedBundle& opened,
                                                const ResultManifest& manifest,
                                                const PlanBundle& plan, std::string_view file) {
  std::set<std::string> plan_jobs(plan.job_ids.begin(), plan.job_ids.end());
  std::set<std::string> seen_jobs;
  std::vector<BundledRun> runs;
  for (std::size_t i = 0; i < manifest.runs->size(); ++i) {
    Result<BundledRun> run = ReadBundledRun(opened, (*manifest.runs)[i], i, plan_jobs, seen_jobs);
    if (!run.ok()) return Refused(file, run.status().message());
    runs.push_back(std::move(run).value());
  }
  return runs;
}

// The lab's record of a bundled run: named after the contributor, split in chunks.
store::ImportedRun ImportedRunOf(BundledRun& bundled, const std::string& run_id,
                                 const OpenedBundle& opened, std::int64_t now_ms) {
  store::ImportedRun run;
  run.run.id = run_id;
  run.run.job_id = bundled.entry.job_id;
  // The rig's agent ids (local-1, ...) mean nothing in the lab: name the contributor.
  run.run.agent_id = opened.signer.name + "/" + bundled.entry.agent_id;
  run.run.state = store::RunState::kSucceeded;
  run.run.exit_status = bundled.entry.exit_status;
  run.run.host_fingerprint_id = bundled.entry.host_fingerprint;
  run.run.summary = std::move(bundled.summary);
  run.run.finished = true;
  run.run.contributor = opened.signer.name;
  run.run.bundle_sha256 = opened.sha256;
  run.run.imported_at_ms = now_ms;
  const std::vector<store::DigestRecord>& records = bundled.records;
  for (std::size_t at = 0; at < records.size(); at += kImportChunkRecords) {
    std::size_t end = std::min(records.size(), at + kImportChunkRecords);
    run.chunks.emplace_back(records.begin() + static_cast<std::ptrdiff_t>(at),
                            records.begin() + static_cast<std::ptrdiff_t>(end));
  }
  run.run.chunks_expected = static_cast<int64_t>(run.chunks.size());
  return run;
}

// What the store gains: the runs it does not hold yet (a rig's run keeps one id in the
// lab whichever bundle brings it, so a later bundle of the same rig adds only the runs
// not yet imported), the jobs they complete, the fingerprints, the bundle's record and
// its event. Counts go into `result`.
Result<store::BundleImport> DecideImport(store::Store& store, const OpenedBundle& opened,
                                         const ResultManifest& manifest,
                                         std::vector<BundledRun> runs, std::string_view file,
                                         const ImportContext& context, ImportResult& result) {
  store::BundleImport import;
  import.bundle = {.sha256 = opened.sha256,
                   .contributor = opened.signer.name,
                   .signer = opened.signer.sign_public,
                   .sequence = manifest.sequence,
                   .experiment = manifest.experiment,
                   .nonce = manifest.nonce,
                   .imported_at_ms = context.now_ms,
                   .run_ids = {}};
  std::set<std::string> fingerprints;
  for (BundledRun& bundled : runs) {
    const RunEntry& entry = bundled.entry;
    if (!bundled.fingerprint_json.empty() && fingerprints.insert(entry.host_fingerprint).second) {
      import.fingerprints.emplace_back(entry.host_fingerprint, bundled.fingerprint_json);
    }
    std::string run_id = opened.signer.name + ":" + entry.run_id;
    if (Result<store::RunRecord> stored = store.GetRun(run_id); stored.ok()) {
      if (stored->contributor != opened.signer.name || stored->job_id != entry.job_id) {
        return Refused(file, "run " + entry.run_id + " (job " + entry.job_id + "): run id " +
                                 run_id + " is stored for another run");
      }
      ++result.already_imported;
      continue;
    } else if (stored.status().code() != StatusCode::kNotFound) {
      return stored.status();
    }
    store::ImportedRun run = ImportedRunOf(bundled, run_id, opened, context.now_ms);
    import.bundle.run_ids.push_back(run.run.id);
    ORCH_ASSIGN_OR_RETURN(store::JobRecord job, store.GetJob(entry.job_id));
    bool in_flight =
        job.state == store::JobState::kAssigned || job.state == store::JobState::kRunning;
    bool completes = context.may_complete ? context.may_complete(job)
                                          : job.state != store::JobState::kSucceeded && !in_flight;
    if (completes) {
      job.state = store::JobState::kSucceeded;
      job.current_run_id = run.run.id;
      job.last_error.clear();
      import.jobs.push_back(job);
      ++result.jobs_completed;
    }
    import.runs.push_back(std::move(run));
  }
  result.runs = static_cast<int>(import.runs.size());
  json detail = {{"contributor", result.contributor},
                 {"sequence", result.sequence},
                 {"experiment", result.experiment},
                 {"runs", result.runs},
                 {"already_imported", result.already_imported},
                 {"jobs_completed", result.jobs_completed}};
  import.events.push_back({.seq = 0,
                           .time_ms = context.now_ms,
                           .kind = "bundle.imported",
                           .subject = opened.sha256,
                           .detail = detail.dump()});
  return import;
}

}  // namespace

Result<WrittenResults> WriteResultBundle(store::Store& store, const PlanBundle& plan,
                                         uint64_t sequence, int64_t now_ms,
                                         const protocol::SecretIdentity& contributor) {
  std::set<std::string, std::less<>> job_ids(plan.job_ids.begin(), plan.job_ids.end());
  ORCH_ASSIGN_OR_RETURN(std::vector<store::RunRecord> runs, store.ListRunsOfJobs(job_ids));
  WrittenResults written;
  BundleContent content{std::string(kResultKind), "{}", {{"plan-bundle", plan.file}}};
  json entries = json::array();
  std::set<std::string> fingerprints;
  for (const std::string& job_id : plan.job_ids) {
    Result<store::JobRecord> job = store.GetJob(job_id);
    const store::RunRecord* run = job.ok() ? UsableRun(*job, runs) : nullptr;
    if (run == nullptr) {
      written.missing_jobs.push_back(job_id);
      continue;
    }
    std::vector<store::DigestRecord> digests;
    ORCH_RETURN_IF_ERROR(store.ScanDigests(run->id, 0, [&](uint64_t pos, std::string_view b) {
      digests.push_back({pos, std::string(b)});
      return true;
    }));
    std::string index = std::to_string(entries.size());
    std::string fingerprint_blob = "fingerprints/" + run->host_fingerprint_id;
    if (!run->host_fingerprint_id.empty() && fingerprints.insert(fingerprint_blob).second) {
      ORCH_ASSIGN_OR_RETURN(std::string json_text, store.GetFingerprint(run->host_fingerprint_id));
      content.blobs.push_back({fingerprint_blob, std::move(json_text)});
    }
    content.blobs.push_back({"runs/" + index + "/summary", run->summary});
    content.blobs.push_back({"runs/" + index + "/digests", EncodeDigests(digests)});
    entries.push_back({{"run", run->id},
                       {"job", run->job_id},
                       {"agent", run->agent_id},
                       {"state", "succeeded"},
                       {"exit_status", run->exit_status},
                       {"positions", digests.size()},
                       {"host_fingerprint", run->host_fingerprint_id},
                       {"fingerprint", run->host_fingerprint_id.empty() ? "" : fingerprint_blob},
                       {"summary", "runs/" + index + "/summary"},
                       {"digests", "runs/" + index + "/digests"}});
    ++written.runs;
  }
  json fields = {{"experiment", plan.experiment},     {"nonce", plan.nonce},
                 {"plan_bundle_sha256", plan.sha256}, {"sequence", sequence},
                 {"created_at_ms", now_ms},           {"runs", std::move(entries)}};
  content.fields_json = fields.dump();
  ORCH_ASSIGN_OR_RETURN(written.file, WriteBundle(content, contributor));
  return written;
}

Result<ImportResult> ImportResultBundle(store::Store& store, std::string_view bytes,
                                        std::string_view file, const ImportContext& context) {
  ORCH_ASSIGN_OR_RETURN(OpenedBundle opened, OpenResultBundle(bytes, file, context));
  ImportResult result;
  result.sha256 = opened.sha256;
  result.contributor = opened.signer.name;
  if (Result<store::BundleRecord> stored = store.GetBundle(opened.sha256); stored.ok()) {
    result.duplicate = true;
    result.sequence = stored->sequence;
    result.experiment = stored->experiment;
    result.runs = static_cast<int>(stored->run_ids.size());
    return result;
  } else if (stored.status().code() != StatusCode::kNotFound) {
    return stored.status();
  }
  // Verify: everything the bundle says, before the store is asked anything of it.
  ORCH_ASSIGN_OR_RETURN(ResultManifest manifest, ReadResultManifest(opened, file));
  result.sequence = manifest.sequence;
  result.experiment = manifest.experiment;
  ORCH_ASSIGN_OR_RETURN(PlanBundle plan, VerifyAnsweredPlan(opened, manifest, file, context));
  ORCH_ASSIGN_OR_RETURN(std::vector<BundledRun> runs,
                        ReadBundledRuns(opened, manifest, plan, file));
  // Decide what the store gains, then write it in one batch.
  Result<store::PlanRecord> stored_plan = store.GetPlan(result.experiment);
  if (!stored_plan.ok()) {
    return Refused(file, "experiment " + result.experiment + " is not in this store (" +
                             stored_plan.status().message() + ")");
  }
  ORCH_ASSIGN_OR_RETURN(
      store::BundleImport import,
      DecideImport(store, opened, manifest, std::move(runs), file, context, result));
  Result<store::WriteOutcome> written = store.ImportBundle(import);
  if (!written.ok()) {
    return Status(written.status().code(),
                  "result bundle " + std::string(file) + ": " + written.status().message());
  }
  result.duplicate = *written == store::WriteOutcome::kDuplicate;
  if (!result.duplicate) {
    for (store::ImportedRun& run : import.runs) result.stored_runs.push_back(std::move(run.run));
    result.completed_jobs = std::move(import.jobs);
  }
  return result;
}

std::string DescribeImport(const ImportResult& result) {
  std::string what = "bundle " + std::to_string(result.sequence) + " of " + result.contributor +
                     " (" + result.sha256.substr(0, 16) + ")";
  if (result.duplicate) {
    return "already imported " + what + " for " + result.experiment + ": nothing changed";
  }
  std::string line =
      "imported " + std::to_string(result.runs) + " runs of " + result.experiment + " from " + what;
  if (result.already_imported > 0) {
    line += " (" + std::to_string(result.already_imported) +
            " more it holds were imported before, from an earlier bundle)";
  }
  return line + "; " + std::to_string(result.jobs_completed) + " jobs completed";
}

}  // namespace orch::bundle
