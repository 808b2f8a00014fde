// Effects: what the coordinator core decides and its shell carries out.
//
// The shell performs a list of effects in order. A store effect that fails
// stops the list: nothing after it happens (in particular no Ack and no Assign
// that depended on it), the failure is logged, the requester of a PutPlan is
// told, and the shell rebuilds the core from the store
// (CoordinatorCore::Restore) so memory matches what is durable. After an
// AppendChunk or FinishRun that succeeded, the shell sends Ack{run_id, seq} to
// `peer` (when set) and hands the stored run record to
// CoordinatorCore::OnRunStored.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.h"
#include "store/records.h"

namespace orch::coordinator {

struct SendEffect {
  std::string peer;
  protocol::Message message;
};

// Store a submitted experiment; then reply CommandReply{true, ok_message} to
// `peer`, or CommandReply{false, <the error>} when the write fails.
struct PutPlanEffect {
  store::PlanRecord plan;
  std::vector<store::JobRecord> jobs;
  std::string peer;
  std::string ok_message;
  // An edited plan of a stored experiment (Store::ReplacePlan), not a new one.
  bool replace = false;
};

struct ApplyEffect {
  store::StateChange change;
};

struct AppendChunkEffect {
  std::string run_id;
  std::uint64_t seq = 0;
  std::vector<store::DigestRecord> records;
  std::string peer;  // who gets the Ack
};

struct FinishRunEffect {
  std::string run_id;
  store::RunOutcome outcome;
  std::string peer;  // who gets Ack{run_id, kRunFinishedSeq}
};

// Store an agent's host fingerprint once (the store keeps one copy per id). A
// failure is logged; runs still refer to the id.
struct PutFingerprintEffect {
  std::string id;
  std::string json;
};

using Effect = std::variant<SendEffect, PutPlanEffect, ApplyEffect, AppendChunkEffect,
                            FinishRunEffect, PutFingerprintEffect>;
using Effects = std::vector<Effect>;

}  // namespace orch::coordinator
