// Message names for logs and errors.
#include "protocol/messages.h"

#include <algorithm>
#include <iterator>

namespace orch::protocol {

std::string_view AgentStateName(AgentState state) {
  switch (state) {
    case AgentState::kConnected:
      return "up";
    case AgentState::kDraining:
      return "draining";
    case AgentState::kDrained:
      return "drained";
    case AgentState::kDisconnected:
      return "down";
    case AgentState::kNeverSeen:
      return "never seen";
  }
  return "unknown";
}

std::string AgentRunsText(const AgentSummary& agent) {
  std::size_t delivering = std::min<std::size_t>(agent.delivering_runs, agent.current_runs.size());
  std::string text =
      std::to_string(agent.current_runs.size() - delivering) + "/" + std::to_string(agent.slots);
  if (delivering > 0) text += " +" + std::to_string(delivering) + " delivering";
  return text;
}

std::string_view RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kCancelled:
      return "cancelled";
    case RunStatus::kTimedOut:
      return "timed_out";
  }
  return "unknown";
}

const char* MessageName(const Message& message) {
  static constexpr const char* kNames[] = {
      "hello",      "welcome",       "reject",        "heartbeat",     "assign",
      "runStarted", "digestChunk",   "runFinished",   "ack",           "cancelRun",
      "drain",      "submit",        "statusRequest", "statusReply",   "commandReply",
      "retry",      "exportRequest", "exportReply",   "importRequest", "cancelExperiment"};
  static_assert(std::size(kNames) == std::variant_size_v<Message>);
  return kNames[message.index()];
}

}  // namespace orch::protocol
