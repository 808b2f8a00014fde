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
// One agent per spool: Open takes an exclusive flock on `agent.lock` in the
// folder (writing its pid there) before it reads anything, and holds it for the
// Spool's life; the kernel releases it when the process ends, however it ends
// (kill -9 too). A second Open while it is held, from any process, fails with
// kFailedPrecondition naming the folder and the holder's pid, having changed
// nothing in the folder. The lock's descriptor is close-on-exec, so drivers
// never inherit it.
//
// Not thread-safe: the agent's spool thread owns it (agent/spool_writer.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/spool_ledger.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "protocol/messages.h"

namespace orch::agent {

class Spool final {
 public:
  // Opens (creating) `dir`, locks it (above) and reloads what an earlier agent
  // left there. Files that do not decode are reported as kDataLoss naming the
  // file; a spool another process holds, as kFailedPrecondition.
  static Result<std::unique_ptr<Spool>> Open(const std::string& dir);
  const std::string& dir() const { return dir_; }

  // Records that `run_id` has started (durably), so a restart knows it never
  // finished.
  Status BeginRun(const std::string& run_id);
  Status AddChunk(const protocol::DigestChunk& chunk);
  Status AddFinished(const protocol::RunFinished& finished);
  // The same, with the message's frame (protocol::Encode of it) already made, as
  // the agent sends it: encoded once.
  Status AddChunk(const protocol::DigestChunk& chunk, std::string frame);
  Status AddFinished(const protocol::RunFinished& finished, std::string frame);

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

  Spool(std::string dir, UniqueFd lock) : dir_(std::move(dir)), lock_(std::move(lock)) {}
  Status Load();
  Status LoadRun(const std::string& run_dir);
  std::string RunDir(const std::string& run_id) const;
  // Removes the run once RunFinished and every chunk are acknowledged.
  Status RemoveIfDone(std::map<std::string, RunEntry>::iterator run);

  std::string dir_;
  UniqueFd lock_;  // holds the flock on agent.lock until the Spool goes away
  std::map<std::string, RunEntry> runs_;
};

}  // namespace orch::agent
