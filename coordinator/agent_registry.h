// AgentRegistry: the agents that said Hello, what they declared, and whether
// they are still heard from.
//
// An agent is connected from its Hello until it is silent for `agent_timeout`
// (then disconnected; its runs keep their leases until those expire) or its
// connection closes. A drained agent takes no new runs. Pure: time is passed
// in; Expire() reports who went silent and NextDeadline() when the next one
// would.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages.h"

namespace orch::coordinator {

struct AgentEntry {
  std::string id;    // also its transport peer id
  std::string host;  // from host facts ("hostname"), may be empty
  // Drivers the agent quarantined (host fact "quarantined_drivers"), may be empty.
  std::string quarantined;
  // Drivers that failed the agent's check at its start ("NAME (ENGINE): why; ...", host
  // fact "unavailable_drivers"): their engines are not offered; may be empty.
  std::string unavailable;
  std::string fingerprint_id;
  protocol::Capabilities capabilities;
  protocol::AgentState state = protocol::AgentState::kConnected;
  std::chrono::milliseconds last_heard{0};
  // The runs the agent said it holds in its last Hello or Heartbeat (running,
  // or finished with results still to deliver): they occupy its slots even
  // when the coordinator no longer counts them as in flight.
  std::set<std::string> listed;
  // Hello::incarnation of the agent process last registered under this id.
  std::string incarnation;
  // Assignments it can take now by its own account: its last Heartbeat's free
  // slots less what was assigned since; 0 after it refused one for want of a
  // slot. Negative: not reported yet (no limit but `slots`).
  std::int32_t free_hint = -1;
  // Runs it listed that the coordinator no longer counts and told it to cancel.
  std::set<std::string> cancel_sent;
  // Runs in flight here that it started (RunStarted) and its last Heartbeat no longer
  // lists: they ended on the agent, which is making their results durable and sending
  // them. They hold no slot (FreeSlots), so the job that fits its idle warm session is
  // assigned without waiting for their RunFinished.
  std::set<std::string> delivering;
  // Its idle warm sessions, from its last Hello or Heartbeat, less those the
  // coordinator has given a job since (matchmaker.h, warm affinity).
  std::vector<protocol::WarmSession> warm_sessions;
  // Digest records received per chunk over the last kRateWindow, oldest first.
  std::deque<std::pair<std::chrono::milliseconds, std::uint32_t>> recent_positions;

  // `orch drain` asked for it: it takes no new runs until a Hello of another
  // incarnation (a restarted agent process), connected or not.
  bool drain_requested = false;
  bool drained_noted = false;  // its "agent.drained" event was recorded

  bool TakesWork() const { return state == protocol::AgentState::kConnected; }
  // Records `count` positions received at `now` and forgets what left the window.
  void NotePositions(std::chrono::milliseconds now, std::uint32_t count);
  // Positions per second over the window ending at `now` (0 when none).
  double PositionsPerSecond(std::chrono::milliseconds now) const;
};

// The window of AgentEntry::PositionsPerSecond.
inline constexpr std::chrono::milliseconds kRateWindow{30000};

// The host an agent's Hello names (its "hostname" fact); "" when none.
std::string HostOf(const protocol::Hello& hello);

class AgentRegistry final {
 public:
  explicit AgentRegistry(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  // Registers or refreshes an agent from its Hello; a drained agent stays
  // drained until a Hello of another incarnation (a restarted agent process).
  AgentEntry& Register(const protocol::Hello& hello, std::chrono::milliseconds now);
  AgentEntry* Find(std::string_view id);
  const AgentEntry* Find(std::string_view id) const;
  // Records that the agent was heard from. No-op for an unknown agent.
  void Heard(std::string_view id, std::chrono::milliseconds now);
  void Disconnect(std::string_view id);

  // Agents silent for the timeout as of `now`: marked disconnected, ids
  // returned.
  std::vector<std::string> Expire(std::chrono::milliseconds now);
  std::optional<std::chrono::milliseconds> NextDeadline() const;

  const std::map<std::string, AgentEntry, std::less<>>& all() const { return agents_; }
  std::map<std::string, AgentEntry, std::less<>>& all() { return agents_; }

 private:
  std::chrono::milliseconds timeout_;
  std::map<std::string, AgentEntry, std::less<>> agents_;
};

}  // namespace orch::coordinator
