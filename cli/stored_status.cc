#include "cli/stored_status.h"

#include <filesystem>
#include <map>

#include "coordinator/job_table.h"
#include "store/rocksdb_store.h"

namespace orch::cli {

Result<std::unique_ptr<store::Store>> OpenStoreToRead(const std::string& data_dir,
                                                      const ScratchDir& scratch) {
  std::string dir = store::RocksDbPathInDataDir(data_dir);
  if (!std::filesystem::is_directory(dir)) {
    return NotFound("no store at " + dir +
                    " (give the coordinator's data directory as --data-dir)");
  }
  if (scratch.path().empty()) return IoError("cannot create a temporary folder to read " + dir);
  return store::OpenRocksDbStoreForReading(dir, scratch.path());
}

Result<protocol::StatusReply> StoredProgress(store::Store& store) {
  ORCH_ASSIGN_OR_RETURN(store::StoreState state, store.LoadState());
  protocol::StatusReply reply;
  std::map<std::string, std::size_t, std::less<>> slot;
  for (const store::PlanRecord& plan : state.plans) {
    slot[plan.experiment] = reply.experiments.size();
    reply.experiments.push_back(protocol::ExperimentProgress{.experiment = plan.experiment});
  }
  for (const store::JobRecord& job : state.jobs) {
    auto it = slot.find(job.experiment);
    if (it == slot.end()) continue;
    protocol::ExperimentProgress& progress = reply.experiments[it->second];
    ++progress.total;
    coordinator::CountJob(job.state, /*runnable=*/true, progress);
  }
  return reply;
}

Result<protocol::StatusReply> StoredStatus(const std::string& data_dir) {
  ScratchDir scratch("orch-status");
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStoreToRead(data_dir, scratch));
  return StoredProgress(*store);
}

}  // namespace orch::cli
