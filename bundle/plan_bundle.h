// Plan bundles (docs/bundles.md): what a contributor's home rig needs to run part of an
// experiment offline. The coordinator writes one from its store and signs it; the rig
// reads it, runs its jobs (`orch run --bundle`) and answers with a result bundle that
// carries it back, so the coordinator can tell that it issued the plan, to whom it
// applies and until when, without remembering anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bundle/bundle_file.h"
#include "protocol/identity_key.h"
#include "store/store.h"

namespace orch::bundle {

inline constexpr std::string_view kPlanKind = "plan";

struct PlanBundle {
  std::string sha256;      // of the file
  std::string experiment;  // the plan's id and name
  std::string nonce;       // 32 hex digits, random per bundle
  int64_t created_at_ms = 0;
  int64_t expires_at_ms = 0;
  std::vector<std::string> cells;        // the cells it holds, in plan order
  std::vector<std::string> job_ids;      // its jobs, in plan order
  std::string plan_json;                 // orch.plan/1 with only those jobs
  protocol::PublicIdentity coordinator;  // who signed it
  std::string file;                      // the bundle file's bytes, as read
};

struct ExportOptions {
  std::string experiment;
  std::vector<std::string> cells;  // labels; empty: every cell
  int64_t now_ms = 0;              // wall clock, ms since the Unix epoch
  int64_t valid_for_ms = 0;        // > 0
};

// The plan bundle file of `options.experiment`, signed with `coordinator`. NotFound for
// an experiment that is not stored; InvalidArgument for a cell the plan does not have
// (naming the cells it has).
Result<std::string> ExportPlanBundle(store::Store& store, const ExportOptions& options,
                                     const protocol::SecretIdentity& coordinator);

// Reads and checks a plan bundle (framing, signature, fields). Not whether it is
// expired: the caller knows the time. Whether its signer is trusted, only through
// `read.trust` (checked before anything is inflated; unset: not checked).
Result<PlanBundle> ReadPlanBundle(std::string_view bytes, std::string_view file,
                                  const ReadOptions& read = {});

// Keeps the jobs (and cells) of `cells` in an orch.plan/1 document; InvalidArgument
// naming an unknown cell and the cells there are.
Result<std::string> KeepCells(std::string_view plan_json, const std::vector<std::string>& cells);

}  // namespace orch::bundle
