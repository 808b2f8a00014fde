#include "coordinator/agent_registry.h"

namespace orch::coordinator {
namespace {

std::string HostOf(const protocol::Hello& hello) {
  for (const protocol::KeyValue& fact : hello.host_facts) {
    if (fact.key == "hostname" || fact.key == "host") return fact.value;
  }
  return "";
}

}  // namespace

AgentEntry& AgentRegistry::Register(const protocol::Hello& hello,
                                    std::chrono::milliseconds now) {
  AgentEntry& agent = agents_[hello.agent_id];
  bool drained = agent.state == protocol::AgentState::kDraining;
  agent.id = hello.agent_id;
  agent.host = HostOf(hello);
  agent.fingerprint_id = hello.fingerprint_id;
  agent.capabilities = hello.capabilities;
  agent.state = drained ? protocol::AgentState::kDraining
                        : protocol::AgentState::kConnected;
  agent.last_heard = now;
  return agent;
}

AgentEntry* AgentRegistry::Find(std::string_view id) {
  auto it = agents_.find(id);
  return it == agents_.end() ? nullptr : &it->second;
}

void AgentRegistry::Heard(std::string_view id, std::chrono::milliseconds now) {
  if (AgentEntry* agent = Find(id)) agent->last_heard = now;
}

void AgentRegistry::Disconnect(std::string_view id) {
  if (AgentEntry* agent = Find(id))
    agent->state = protocol::AgentState::kDisconnected;
}

std::vector<std::string> AgentRegistry::Expire(std::chrono::milliseconds now) {
  std::vector<std::string> expired;
  for (auto& [id, agent] : agents_) {
    if (agent.state == protocol::AgentState::kDisconnected) continue;
    if (now - agent.last_heard < timeout_) continue;
    agent.state = protocol::AgentState::kDisconnected;
    expired.push_back(id);
  }
  return expired;
}

std::optional<std::chrono::milliseconds> AgentRegistry::NextDeadline() const {
  std::optional<std::chrono::milliseconds> next;
  for (const auto& [id, agent] : agents_) {
    if (agent.state == protocol::AgentState::kDisconnected) continue;
    auto deadline = agent.last_heard + timeout_;
    if (!next || deadline < *next) next = deadline;
  }
  return next;
}

}  // namespace orch::coordinator
