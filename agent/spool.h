// Spool: the agent's durable outbox. Every DigestChunk and RunFinished is
// written here (fsync'd) before it is sent, and stays until the coordinator
// acknowledges it, so an agent restart or a coordinator outage loses nothing
// (docs/agent.md).
//
// Layout: one directory per run, named by the hex of the run id, holding
// `chunk-<seq>.msg` (an encoded protocol frame), `chunk-<seq>.acked` (an empty
// marker once acknowledged, so the run's chunk count survives), and
// `finished.msg`. The directory is removed when RunFinished and every chunk are
// acknowledged (the coordinator may store RunFinished before a chunk it failed to
// store; that chunk stays here and is sent again). After a restart a RunFinished
// acknowledged while a chunk was not is sent once more (storage is idempotent).
// Writes go to a temporary file, are fsync'd, renamed into place and the
// directory is fsync'd.
//
// Not thread-safe: owned by the agent's event loop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/spool_ledger.h"
#include "base/status.h"
#include "protocol/messages.h"

namespace orch::agent {

class Spool final {
 public:
  // Opens (creating) `dir` and reloads what an earlier agent left there. Files
  // that do not decode are reported as kDataLoss naming the file.
  static Result<std::unique_ptr<Spool>> Open(const std::string& dir);
  const std::string& dir() const { return dir_; }

  // Records that `run_id` has started (durably), so a restart knows it never
  // finished.
  Status BeginRun(const std::string& run_id);
  Status AddChunk(const protocol::DigestChunk& chunk);
  Status AddFinished(const protocol::RunFinished& finished);

  // Removes what the coordinator acknowledged. Unknown runs and seqs are
  // ignored (acks are at-least-once too).
  Status Ack(const std::string& run_id, std::uint64_t seq);

  // Every unacknowledged message, as frames ready to send: runs in id order,
  // each run's chunks by seq, then its RunFinished.
  std::vector<std::string> UnackedFrames() const;
  // Every unacknowledged message as "RUN/SEQ" (SEQ kRunFinishedSeq for a
  // RunFinished), in the order of UnackedFrames.
  std::vector<std::string> UnackedKeys() const;
  // Runs that began but have no RunFinished (their driver died with an earlier
  // agent).
  std::vector<std::string> UnfinishedRuns() const;
  // Runs whose RunFinished is written and not all of whose messages are
  // acknowledged yet (the coordinator still waits for them: "delivering").
  std::vector<std::string> FinishedUnacked() const;
  // Chunks written for `run_id`, acknowledged or not.
  std::uint64_t ChunkCount(const std::string& run_id) const;
  // Messages not yet acknowledged.
  std::size_t unacked() const;
  // What is written and not yet acknowledged, without the bytes (AgentCore's view).
  SpoolLedger Ledger() const;

 private:
  struct RunEntry {
    std::map<std::uint64_t, std::string> unacked_chunks;  // seq -> frame
    std::uint64_t chunk_count = 0;
    std::optional<std::string> finished;  // its frame, until the run is removed
    bool finished_acked = false;          // RunFinished acknowledged, chunks not all
  };

  explicit Spool(std::string dir) : dir_(std::move(dir)) {}
  Status Load();
  Status LoadRun(const std::string& run_dir);
  std::string RunDir(const std::string& run_id) const;
  // Removes the run once RunFinished and every chunk are acknowledged.
  Status RemoveIfDone(std::map<std::string, RunEntry>::iterator run);

  std::string dir_;
  std::map<std::string, RunEntry> runs_;
};

}  // namespace orch::agent
