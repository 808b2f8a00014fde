// What a coordinator's store holds, read without the coordinator: the store opened
// read-only (as a secondary instance, so a running coordinator may hold it) and its
// experiments with their job counts, for `orch report`, `orch experiments --data-dir`
// and `orch status` of a run that has ended.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "cli/scratch_dir.h"
#include "protocol/messages.h"
#include "store/store.h"

namespace orch::cli {

// The store of the data directory `data_dir`, read-only; `scratch` holds the
// instance's own files and must outlive it. NotFound when there is no store.
Result<std::unique_ptr<store::Store>> OpenStoreToRead(const std::string& data_dir,
                                                      const ScratchDir& scratch);

// Every stored experiment with its job counts as `orch status` counts them (no
// agents, no ETAs; with no agent connected no pending job counts as unrunnable).
Result<protocol::StatusReply> StoredProgress(store::Store& store);
// StoredProgress of the store in `data_dir`.
Result<protocol::StatusReply> StoredStatus(const std::string& data_dir);

}  // namespace orch::cli
