#include "tests/support/simulated_agents.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "protocol/codec.h"
#include "protocol/zmq_transport.h"

namespace orch::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t MonotonicNs() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

struct Agent {
  std::string id;
  std::unique_ptr<protocol::ZmqTransport> transport;
  bool welcomed = false;
  std::chrono::milliseconds heartbeat{1000};
  Clock::time_point next_send;                    // the next Hello (not welcomed) or Heartbeat
  std::map<std::string, std::int64_t> finishing;  // run -> RunFinished sent (ns)
};

class Simulation {
 public:
  Simulation(const SimulatedAgentsOptions& options, SimulatedAgentsStats& stats)
      : options_(options), stats_(stats) {}

  Status Connect() {
    for (int i = 0; i < options_.count; ++i) {
      Agent agent;
      agent.id = options_.id_prefix + "-" + std::to_string(options_.first + i);
      ORCH_ASSIGN_OR_RETURN(agent.transport,
                            protocol::ConnectZmqClient(context_, options_.coordinator, agent.id));
      agent.next_send = Clock::now();
      agents_.push_back(std::move(agent));
    }
    stats_.agents = options_.count;
    return Status::Ok();
  }

  void Step() {
    for (Agent& agent : agents_) Drain(agent);
    Clock::time_point now = Clock::now();
    for (Agent& agent : agents_) {
      if (now < agent.next_send) continue;
      if (agent.welcomed) {
        Send(agent, protocol::Heartbeat{agent.id, {}, options_.slots});
        ++stats_.heartbeats;
        agent.next_send = now + agent.heartbeat;
      } else {
        Send(agent, Hello(agent));
        ++stats_.hellos;
        agent.next_send = now + std::chrono::seconds(1);
      }
    }
    Wait();
  }

 private:
  protocol::Hello Hello(const Agent& agent) const {
    protocol::Hello hello;
    hello.agent_id = agent.id;
    hello.capabilities = {{options_.engine}, "cpu", 0, options_.slots, {}};
    hello.host_facts = {{"hostname", "sim-host"}};
    hello.incarnation = agent.id;
    return hello;
  }

  void Send(Agent& agent, const protocol::Message& message) {
    (void)agent.transport->Send(protocol::kServerPeer, protocol::Encode(message));
  }

  void Drain(Agent& agent) {
    while (std::optional<protocol::TransportEvent> event = agent.transport->Receive()) {
      if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
      Result<protocol::Message> message = protocol::Decode(event->frame);
      if (!message.ok()) {
        ++stats_.other_messages;
        continue;
      }
      Handle(agent, *message);
    }
  }

  void Handle(Agent& agent, const protocol::Message& message) {
    if (const auto* welcome = std::get_if<protocol::Welcome>(&message)) {
      if (!agent.welcomed) ++stats_.welcomed;
      agent.welcomed = true;
      agent.heartbeat = welcome->heartbeat_interval;
      agent.next_send = Clock::now() + agent.heartbeat;
    } else if (const auto* assign = std::get_if<protocol::Assign>(&message)) {
      Run(agent, *assign);
    } else if (const auto* ack = std::get_if<protocol::Ack>(&message)) {
      if (ack->seq != protocol::kRunFinishedSeq) return;
      auto it = agent.finishing.find(ack->run_id);
      if (it == agent.finishing.end()) return;
      std::int64_t now = MonotonicNs();
      stats_.ack_latency_ns.push_back(now - it->second);
      stats_.last_ack_ns = now;
      ++stats_.finished_acked;
      agent.finishing.erase(it);
    } else if (std::holds_alternative<protocol::Reject>(message)) {
      ++stats_.rejects;
    } else {
      ++stats_.other_messages;
    }
  }

  // A no-op run: started, one record, finished, at once.
  void Run(Agent& agent, const protocol::Assign& assign) {
    ++stats_.assigns;
    if (stats_.first_assign_ns == 0) stats_.first_assign_ns = MonotonicNs();
    if (!runs_.insert(assign.run_id).second) ++stats_.duplicate_assigns;
    Send(agent, protocol::RunStarted{assign.run_id});
    Send(agent, protocol::DigestChunk{assign.run_id, 0, {{0, "no-op digest"}}});
    agent.finishing[assign.run_id] = MonotonicNs();
    Send(agent, protocol::RunFinished{assign.run_id, protocol::RunStatus::kSucceeded, "{}", "", 1});
  }

  // Up to 2 ms for any socket to turn readable (ZMQ_FD is edge-triggered, so every
  // socket is drained at each step anyway).
  void Wait() {
    std::vector<pollfd> fds;
    fds.reserve(agents_.size());
    for (const Agent& agent : agents_) fds.push_back({agent.transport->NativeFd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 2);
  }

  const SimulatedAgentsOptions& options_;
  SimulatedAgentsStats& stats_;
  protocol::ZmqContext context_;
  std::vector<Agent> agents_;
  std::set<std::string> runs_;
};

}  // namespace

Result<SimulatedAgentsStats> RunSimulatedAgents(const SimulatedAgentsOptions& options,
                                                const std::atomic<bool>& stop) {
  SimulatedAgentsStats stats;
  Simulation simulation(options, stats);
  ORCH_RETURN_IF_ERROR(simulation.Connect());
  while (!stop.load()) simulation.Step();
  return stats;
}

void Merge(SimulatedAgentsStats& total, const SimulatedAgentsStats& part) {
  total.agents += part.agents;
  total.welcomed += part.welcomed;
  total.rejects += part.rejects;
  total.hellos += part.hellos;
  total.heartbeats += part.heartbeats;
  total.assigns += part.assigns;
  total.duplicate_assigns += part.duplicate_assigns;
  total.finished_acked += part.finished_acked;
  total.other_messages += part.other_messages;
  if (part.first_assign_ns != 0 &&
      (total.first_assign_ns == 0 || part.first_assign_ns < total.first_assign_ns)) {
    total.first_assign_ns = part.first_assign_ns;
  }
  total.last_ack_ns = std::max(total.last_ack_ns, part.last_ack_ns);
  total.ack_latency_ns.insert(total.ack_latency_ns.end(), part.ack_latency_ns.begin(),
                              part.ack_latency_ns.end());
}

std::int64_t Quantile(std::vector<std::int64_t>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

std::string StatsToJson(const SimulatedAgentsStats& stats) {
  std::vector<std::int64_t> latencies = stats.ack_latency_ns;
  nlohmann::json out = {{"agents", stats.agents},
                        {"welcomed", stats.welcomed},
                        {"rejects", stats.rejects},
                        {"hellos", stats.hellos},
                        {"heartbeats", stats.heartbeats},
                        {"assigns", stats.assigns},
                        {"duplicate_assigns", stats.duplicate_assigns},
                        {"finished_acked", stats.finished_acked},
                        {"other_messages", stats.other_messages},
                        {"first_assign_ns", stats.first_assign_ns},
                        {"last_ack_ns", stats.last_ack_ns},
                        {"ack_latency_ns", latencies}};
  return out.dump();
}

Result<SimulatedAgentsStats> StatsFromJson(const std::string& text) {
  nlohmann::json in = nlohmann::json::parse(text, nullptr, false);
  if (!in.is_object()) return InvalidArgument("simulated agents' stats are not a JSON object");
  SimulatedAgentsStats stats;
  try {
    stats.agents = in.at("agents").get<int>();
    stats.welcomed = in.at("welcomed").get<int>();
    stats.rejects = in.at("rejects").get<std::uint64_t>();
    stats.hellos = in.at("hellos").get<std::uint64_t>();
    stats.heartbeats = in.at("heartbeats").get<std::uint64_t>();
    stats.assigns = in.at("assigns").get<std::uint64_t>();
    stats.duplicate_assigns = in.at("duplicate_assigns").get<std::uint64_t>();
    stats.finished_acked = in.at("finished_acked").get<std::uint64_t>();
    stats.other_messages = in.at("other_messages").get<std::uint64_t>();
    stats.first_assign_ns = in.at("first_assign_ns").get<std::int64_t>();
    stats.last_ack_ns = in.at("last_ack_ns").get<std::int64_t>();
    stats.ack_latency_ns = in.at("ack_latency_ns").get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("simulated agents' stats: ") + e.what());
  }
  return stats;
}

}  // namespace orch::testing
