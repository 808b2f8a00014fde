#include "agent/spool_ledger.h"

#include "protocol/messages.h"

namespace orch::agent {

void SpoolLedger::AddChunk(const std::string& run_id, std::uint64_t seq) {
  runs_[run_id].unacked_chunks.insert(seq);
}

void SpoolLedger::AddFinished(const std::string& run_id) { runs_[run_id].finished = true; }

void SpoolLedger::Ack(const std::string& run_id, std::uint64_t seq) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return;
  if (seq == protocol::kRunFinishedSeq) {
    if (!it->second.finished) return;
    it->second.finished_acked = true;
  } else if (it->second.unacked_chunks.erase(seq) == 0) {
    return;
  }
  if (it->second.finished_acked && it->second.unacked_chunks.empty()) runs_.erase(it);
}

std::vector<std::string> SpoolLedger::UnackedKeys() const {
  std::vector<std::string> keys;
  for (const auto& [run_id, run] : runs_) {
    for (std::uint64_t seq : run.unacked_chunks) keys.push_back(run_id + "/" + std::to_string(seq));
    if (run.finished && !run.finished_acked) {
      keys.push_back(run_id + "/" + std::to_string(protocol::kRunFinishedSeq));
    }
  }
  return keys;
}

std::vector<std::string> SpoolLedger::FinishedUnacked() const {
  std::vector<std::string> runs;
  for (const auto& [run_id, run] : runs_) {
    if (run.finished) runs.push_back(run_id);
  }
  return runs;
}

std::size_t SpoolLedger::unacked() const {
  std::size_t count = 0;
  for (const auto& [run_id, run] : runs_) {
    count += run.unacked_chunks.size() + (run.finished && !run.finished_acked ? 1 : 0);
  }
  return count;
}

}  // namespace orch::agent
