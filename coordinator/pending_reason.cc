#include "coordinator/pending_reason.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <variant>

namespace orch::coordinator {
namespace {

using Agents = std::vector<const AgentEntry*>;

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

std::string Ids(const Agents& agents) {
  std::set<std::string> ids;
  for (const AgentEntry* agent : agents) ids.insert(agent->id);
  return Join(ids);
}

template <typename Keep>
Agents Filter(const Agents& agents, Keep keep) {
  Agents kept;
  std::copy_if(agents.begin(), agents.end(), std::back_inserter(kept), keep);
  return kept;
}

bool Holds(const AgentEntry& agent, const std::string& model) {
  if (model.empty() || model.starts_with("synth:")) return true;
  const auto& hashes = agent.capabilities.model_hashes;
  return std::find(hashes.begin(), hashes.end(), model) != hashes.end();
}

const Refusal* RefusalBy(const std::vector<Refusal>& refusals, const std::string& agent) {
  for (const Refusal& refusal : refusals) {
    if (refusal.agent == agent) return &refusal;
  }
  return nullptr;
}

PendingReason Never(std::string text) { return {std::move(text), false}; }

// The agents that meet `needs`, or the reason why none does.
std::variant<Agents, PendingReason> Capable(const protocol::Requirements& needs,
                                            const Agents& live) {
  std::string engine = needs.engine.empty() ? "any engine" : "engine " + needs.engine;
  Agents with_engine = Filter(live, [&](const AgentEntry* a) {
    const auto& engines = a->capabilities.engines;
    return needs.engine.empty() ||
           std::find(engines.begin(), engines.end(), needs.engine) != engines.end();
  });
  if (with_engine.empty()) {
    std::set<std::string> offered;
    for (const AgentEntry* a : live)
      offered.insert(a->capabilities.engines.begin(), a->capabilities.engines.end());
    std::string text = "no connected agent offers " + engine + " (offered: " + Join(offered) + ")";
    // An agent whose driver for it failed its check says why (a missing file, another
    // version than the label).
    for (const AgentEntry* a : live) {
      if (!needs.engine.empty() &&
          a->unavailable.find("(" + needs.engine + "):") != std::string::npos)
        text += "; agent " + a->id + "'s drivers that failed their check: " + a->unavailable;
    }
    return Never(text);
  }
  Agents on_hardware = Filter(with_engine, [&](const AgentEntry* a) {
    return needs.hardware.empty() || a->capabilities.hardware_class == needs.hardware;
  });
  if (on_hardware.empty()) {
    std::set<std::string> classes;
    for (const AgentEntry* a : with_engine) classes.insert(a->capabilities.hardware_class);
    return Never("no agent with " + engine + " has hardware " + needs.hardware +
                 " (they have: " + Join(classes) + ")");
  }
  std::string where = engine + (needs.hardware.empty() ? "" : " on " + needs.hardware);
  Agents with_gpus =
      Filter(on_hardware, [&](const AgentEntry* a) { return a->capabilities.gpus >= needs.gpus; });
  if (with_gpus.empty()) {
    std::int32_t most = 0;
    for (const AgentEntry* a : on_hardware) most = std::max(most, a->capabilities.gpus);
    return Never("no agent with " + where + " has " + std::to_string(needs.gpus) +
                 " GPUs (most: " + std::to_string(most) + ")");
  }
  Agents holding = Filter(with_gpus, [&](const AgentEntry* a) { return Holds(*a, needs.model); });
  if (holding.empty()) {
    return Never("no agent with " + where + " holds model " + needs.model +
                 " (put the file in an agent's model_dirs, or orch run --model-dir DIR)");
  }
  return holding;
}

}  // namespace

PendingReason ExplainPending(const protocol::Requirements& needs,
                             const std::vector<Refusal>& refusals, const AgentRegistry& agents,
                             const std::function<std::int32_t(std::string_view)>& busy) {
  Agents live;
  for (const auto& [id, agent] : agents.all()) {
    if (agent.state != protocol::AgentState::kDisconnected) live.push_back(&agent);
  }
  if (live.empty()) return Never("no agent connected");
  std::variant<Agents, PendingReason> capable = Capable(needs, live);
  if (auto* reason = std::get_if<PendingReason>(&capable)) return *reason;
  Agents& able = std::get<Agents>(capable);
  Agents willing = Filter(able, [&](const AgentEntry* a) { return !RefusalBy(refusals, a->id); });
  if (willing.empty()) {
    std::string text = "refused by every capable agent:";
    for (const AgentEntry* a : able)
      text += " " + a->id + ": " + RefusalBy(refusals, a->id)->reason + ";";
    text.pop_back();
    return Never(text);
  }
  Agents taking = Filter(willing, [](const AgentEntry* a) { return a->TakesWork(); });
  if (taking.empty()) return Never("capable agents draining: " + Ids(willing));
  Agents free =
      Filter(taking, [&](const AgentEntry* a) { return busy(a->id) < a->capabilities.slots; });
  if (free.empty()) return {"waiting for a free slot on " + Ids(taking), true};
  return {"waiting to be dispatched to " + Ids(free), true};
}

}  // namespace orch::coordinator
