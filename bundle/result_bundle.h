// Result bundles (docs/bundles.md): the runs a home rig made of a plan bundle's jobs,
// signed with the contributor's key, and their import into a coordinator's store.
//
// Writing reads the rig's own store (what `orch run --bundle` ran): per job of the plan
// bundle, its complete successful run, with the run's summary, digests and host
// fingerprint. Importing verifies everything before one atomic store write
// (Store::ImportBundle): the signature and that the key is trusted, every content hash,
// that this coordinator issued the plan bundle it answers and that it has not expired,
// that every run is of one of its jobs and is complete and well formed, and the
// signer's sequence number (no replay, no rollback). A refused bundle stores nothing.
// An imported run's id is "<contributor>:<the rig's run id>", so a rig's run that an
// earlier bundle already brought is not stored twice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bundle/bundle_file.h"
#include "bundle/plan_bundle.h"
#include "protocol/identity_key.h"
#include "store/store.h"

namespace orch::bundle {

inline constexpr std::string_view kResultKind = "result";
// Digest records per stored chunk of an imported run.
inline constexpr size_t kImportChunkRecords = 1024;

struct WrittenResults {
  std::string file;                       // the result bundle's bytes
  int runs = 0;                           // runs it holds
  std::vector<std::string> missing_jobs;  // the plan bundle's jobs without a usable run
};

// The result bundle of `plan` from the rig's `store`, sequence number `sequence`.
Result<WrittenResults> WriteResultBundle(store::Store& store, const PlanBundle& plan,
                                         uint64_t sequence, int64_t now_ms,
                                         const protocol::SecretIdentity& contributor);

struct ImportContext {
  std::vector<protocol::PublicIdentity> trusted;  // contributors' keys
  std::string trust_hint;                         // how to trust an unknown key (TrustedSigner)
  // Admitted keys of other roles: a bundle one of them signed is told it needs a
  // contributor key instead of how to trust it (TrustedSigner).
  std::vector<protocol::PublicIdentity> other_roles = {};
  std::string coordinator_key;  // this coordinator's Ed25519 public key (Z85)
  int64_t now_ms = 0;           // wall clock, ms since the Unix epoch
  // What the bundle may inflate to, all blobs together (bundle_file.h ReadOptions); the
  // signer is trusted first, so an unknown key's bundle inflates nothing.
  uint64_t max_bundle_bytes = kDefaultMaxBundleBytes;
  // Whether an imported successful run completes its job (job record in): the live
  // coordinator says no for a job one of its agents is running. Default: any job not
  // yet succeeded and not in flight in the store.
  std::function<bool(const store::JobRecord&)> may_complete = nullptr;
  // Whether the importing user may add runs to this experiment; unset: yes.
  std::function<bool(const std::string& experiment)> may_import = nullptr;
};

struct ImportResult {
  bool duplicate = false;  // already imported: nothing changed
  std::string sha256;
  std::string contributor;
  uint64_t sequence = 0;
  std::string experiment;
  int runs = 0;              // runs stored
  int already_imported = 0;  // runs it holds that an earlier bundle of the signer brought
  int jobs_completed = 0;    // jobs it completed
  // What the store gained (none for a duplicate): the runs, without their digests, and
  // the job records it replaced (the jobs it completed), as written.
  std::vector<store::RunRecord> stored_runs;
  std::vector<store::JobRecord> completed_jobs;
};

Result<ImportResult> ImportResultBundle(store::Store& store, std::string_view bytes,
                                        std::string_view file, const ImportContext& context);

// One line for a person: "imported 12 runs of kv-study from carol (bundle 3, 1f2e...):
// 12 jobs completed" or "already imported ...: nothing changed".
std::string DescribeImport(const ImportResult& result);

}  // namespace orch::bundle
