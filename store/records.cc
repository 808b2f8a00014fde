#include "store/records.h"

namespace orch::store {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "pending";
    case JobState::kAssigned:
      return "assigned";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kLost:
      return "lost";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kAssigned:
      return "assigned";
    case RunState::kRunning:
      return "running";
    case RunState::kSucceeded:
      return "succeeded";
    case RunState::kFailed:
      return "failed";
    case RunState::kLost:
      return "lost";
    case RunState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace orch::store
