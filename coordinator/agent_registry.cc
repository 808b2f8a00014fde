#include "coordinator/agent_registry.h"

#include <algorithm>

namespace orch::coordinator {
namespace {

// The value of the first of `keys` among the Hello's host facts; "" when none.
std::string FactOf(const protocol::Hello& hello, std::initializer_list<std::string_view> keys) {
  for (const protocol::KeyValue& fact : hello.host_facts) {
    for (std::string_view key : keys) {
      if (fact.key == key) return fact.value;
    }
  }
  return "";
}

}  // namespace

std::string HostOf(const protocol::Hello& hello) { return FactOf(hello, {"hostname", "host"}); }

void AgentEntry::NotePositions(std::chrono::milliseconds now, std::uint32_t count) {
  recent_positions.emplace_back(now, count);
  // The entry just added is never older than the window, so the deque cannot run
  // empty here.
  while (now - recent_positions.front().first > kRateWindow) recent_positions.pop_front();
}

// Over the time since the oldest chunk in the window (at least one second), so
// that a run of a few seconds is not diluted by the whole window.
double AgentEntry::PositionsPerSecond(std::chrono::milliseconds now) const {
  std::uint64_t total = 0;
  std::chrono::milliseconds oldest = now;
  for (const auto& [at, count] : recent_positions) {
    // Entries are trimmed only when a chunk arrives (NotePositions): an agent that
    // went quiet still holds old ones, which must not count.
    if (now - at > kRateWindow) continue;
    total += count;
    oldest = std::min(oldest, at);
  }
  auto span = std::max(now - oldest, std::chrono::milliseconds(1000));
  return total == 0 ? 0.0 : total * 1000.0 / static_cast<double>(span.count());
}

AgentEntry& AgentRegistry::Register(const protocol::Hello& hello, std::chrono::milliseconds now) {
  // Every Hello replaces what the agent declared: after a restart it may have
  // other models, engines or slots.
  AgentEntry& agent = agents_[hello.agent_id];
  if (agent.incarnation != hello.incarnation) {
    agent.drain_requested = false;
    agent.drained_noted = false;
  }
  bool drained = agent.drain_requested;
  agent.incarnation = hello.incarnation;
  agent.id = hello.agent_id;
  agent.host = HostOf(hello);
  agent.quarantined = FactOf(hello, {"quarantined_drivers"});
  agent.unavailable = FactOf(hello, {"unavailable_drivers"});
  agent.fingerprint_id = hello.fingerprint_id;
  agent.capabilities = hello.capabilities;
  agent.warm_sessions = hello.warm_sessions;
  agent.state = drained ? protocol::AgentState::kDraining : protocol::AgentState::kConnected;
  agent.last_heard = now;
  return agent;
}

AgentEntry* AgentRegistry::Find(std::string_view id) {
  auto it = agents_.find(id);
  return it == agents_.end() ? nullptr : &it->second;
}

const AgentEntry* AgentRegistry::Find(std::string_view id) const {
  auto it = agents_.find(id);
  return it == agents_.end() ? nullptr : &it->second;
}

void AgentRegistry::Heard(std::string_view id, std::chrono::milliseconds now) {
  if (AgentEntry* agent = Find(id)) agent->last_heard = now;
}

void AgentRegistry::Disconnect(std::string_view id) {
  if (AgentEntry* agent = Find(id)) agent->state = protocol::AgentState::kDisconnected;
}

std::vector<std::string> AgentRegistry::Expire(std::chrono::milliseconds now) {
  std::vector<std::string> expired;
  for (auto& [id, agent] : agents_) {
    if (agent.state == protocol::AgentState::kDisconnected) continue;
    // Expires at exactly last_heard + timeout, so a Tick at NextDeadline() always
    // expires the agent it was armed for.
    if (now - agent.last_heard < timeout_) continue;
    agent.state = protocol::AgentState::kDisconnected;
    expired.push_back(id);
  }
  return expired;
}

std::optional<std::chrono::milliseconds> AgentRegistry::NextDeadline() const {
  std::optional<std::chrono::milliseconds> next;
  for (const auto& [id, agent] : agents_) {
    // A disconnected agent has nothing left to time out.
    if (agent.state == protocol::AgentState::kDisconnected) continue;
    auto deadline = agent.last_heard + timeout_;
    if (!next || deadline < *next) next = deadline;
  }
  return next;
}

}  // namespace orch::coordinator
