// SpoolLedger: the spool's bookkeeping without its bytes: which messages of which
// runs are written and not yet acknowledged. AgentCore keeps one to decide (Hello's
// delivering runs, when a message waited too long for its Ack, when a drain is
// done) without touching the disk; Spool::Ledger() gives the real spool's, which
// the shell hands to the core at start and after a spool write that failed.
//
// Same rules as the Spool (agent/spool.h): a message is keyed "RUN/SEQ" (SEQ
// kRunFinishedSeq for a RunFinished); acks of unknown runs or seqs are ignored; a
// run is forgotten once its RunFinished and every chunk are acknowledged. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace orch::agent {

class SpoolLedger final {
 public:
  void BeginRun(const std::string& run_id) { runs_[run_id]; }
  void AddChunk(const std::string& run_id, std::uint64_t seq);
  void AddFinished(const std::string& run_id);
  void Ack(const std::string& run_id, std::uint64_t seq);
  // For Spool::Ledger(): a RunFinished acknowledged while the run is still in the
  // spool (it is kept until its chunks are acknowledged too).
  void MarkFinishedAcked(const std::string& run_id) { runs_[run_id].finished_acked = true; }

  // Every unacknowledged message as "RUN/SEQ", runs in id order, chunks by seq,
  // then the RunFinished.
  std::vector<std::string> UnackedKeys() const;
  // Runs whose RunFinished is written and not all of whose messages are
  // acknowledged yet.
  std::vector<std::string> FinishedUnacked() const;
  std::size_t unacked() const;

  friend bool operator==(const SpoolLedger&, const SpoolLedger&) = default;

 private:
  struct Run {
    std::set<std::uint64_t> unacked_chunks;
    bool finished = false;
    bool finished_acked = false;
    friend bool operator==(const Run&, const Run&) = default;
  };
  std::map<std::string, Run> runs_;
};

}  // namespace orch::agent
