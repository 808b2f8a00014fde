#include "agent/server_pool.h"

#include <utility>

namespace orch::agent {
namespace {

constexpr char kLoopback[] = "127.0.0.1";

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

std::string Substitute(const std::string& arg, const ServerKey& key, int port) {
  std::string out = ReplaceAll(arg, "{model}", key.model);
  out = ReplaceAll(std::move(out), "{port}", std::to_string(port));
  return ReplaceAll(std::move(out), "{host}", kLoopback);
}

std::string Describe(const AxisValues& axes) {
  std::string out;
  for (const auto& [axis, value] : axes) out += (out.empty() ? "" : ", ") + axis + "=" + value;
  return out.empty() ? "no server-level axes" : out;
}

std::string Mapped(const std::map<std::string, ServerAxisValue>& values) {
  std::string out;
  for (const auto& [value, what] : values) out += (out.empty() ? "" : ", ") + value;
  return out;
}

}  // namespace

const ServerAxisValue* MappingFor(const std::map<std::string, ServerAxisValue>& values,
                                  const std::string& value) {
  auto exact = values.find(value);
  if (exact != values.end()) return &exact->second;
  auto any = values.find(kAnyAxisValue);
  return any == values.end() ? nullptr : &any->second;
}

ServerLaunch ExpandLaunch(const ServerConfig& server, const ServerKey& key, int port) {
  ServerLaunch launch;
  for (const std::string& arg : server.launch) launch.argv.push_back(Substitute(arg, key, port));
  for (const auto& [axis, value] : key.axes) {
    const ServerAxisValue& what = *MappingFor(server.axes.at(axis), value);
    for (const std::string& arg : what.args) {
      launch.argv.push_back(ReplaceAll(Substitute(arg, key, port), "{value}", value));
    }
    for (const std::string& var : what.env) launch.env.push_back(ReplaceAll(var, "{value}", value));
  }
  return launch;
}

ServerPool::ServerPool(std::vector<ServerConfig> servers) : servers_(std::move(servers)) {}

std::optional<std::size_t> ServerPool::EntryFor(const std::string& engine) const {
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i].engine == engine) return i;
  }
  return std::nullopt;
}

ServerDecision ServerPool::Choose(const std::string& run_id, const std::string& engine,
                                  const std::string& model, const AxisValues& coordinate,
                                  const std::function<bool(int)>& alive) {
  std::optional<std::size_t> entry = EntryFor(engine);
  if (!entry) return {};
  if (!servers_[*entry].launched()) return Attach(*entry, run_id);
  return ForLaunchEntry(*entry, run_id, model, coordinate, alive);
}

ServerDecision ServerPool::Attach(std::size_t entry, const std::string& run_id) {
  const ServerConfig& server = servers_[entry];
  ServerDecision decision{.kind = ServerDecision::Kind::kAttached, .entry = entry};
  decision.server = {.url = server.url,
                     .api_key_file = server.api_key_file,
                     .mode = "attached",
                     .jobs_before = attached_jobs_[entry]++};
  users_[run_id] = entry;
  return decision;
}

ServerDecision ServerPool::ForLaunchEntry(std::size_t entry, const std::string& run_id,
                                          const std::string& model, const AxisValues& coordinate,
                                          const std::function<bool(int)>& alive) {
  const ServerConfig& server = servers_[entry];
  ServerDecision decision{.entry = entry};
  decision.key.model = model;
  for (const auto& [axis, values] : server.axes) {
    auto value = coordinate.find(axis);
    if (value == coordinate.end()) continue;
    if (MappingFor(values, value->second) == nullptr) {
      decision.kind = ServerDecision::Kind::kRefused;
      decision.code = "invalid_combination";
      decision.message = "axis " + axis + " = \"" + value->second +
                         "\" has no mapping in the [[servers]] entry for " + server.engine + " (" +
                         server.where + "; it maps " + axis + " = " + Mapped(values) +
                         "): this agent cannot launch that server";
      return decision;
    }
    decision.key.axes[axis] = value->second;
  }
  auto current = launched_.find(entry);
  if (current != launched_.end() && current->second.ready && !alive(current->second.pid)) {
    // Died between jobs: launched again below.
    for (const std::string& user : current->second.users) users_.erase(user);
    launched_.erase(current);
    current = launched_.end();
  }
  if (current != launched_.end()) {
    Launched& running = current->second;
    if (running.ready && running.key == decision.key) {
      decision.kind = ServerDecision::Kind::kReused;
      decision.server = Take(entry, run_id);
      return decision;
    }
    if (!running.ready || !running.users.empty()) {
      decision.kind = ServerDecision::Kind::kRefused;
      decision.code = "agent_busy";
      decision.message =
          "the " + server.engine + " server of this agent is " +
          (running.ready ? "serving " + std::to_string(running.users.size()) + " other run(s)"
                         : "starting") +
          " for " + Describe(running.key.axes) + " on " + running.key.model + "; this job needs " +
          Describe(decision.key.axes) + " on " + model;
      return decision;
    }
    decision.stop_pid = running.pid;
    launched_.erase(current);
  }
  decision.kind = ServerDecision::Kind::kLaunch;
  launched_[entry] = Launched{.key = decision.key};
  return decision;
}

JobServer ServerPool::Take(std::size_t entry, const std::string& run_id) {
  Launched& running = launched_.at(entry);
  running.users.insert(run_id);
  users_[run_id] = entry;
  return {.url = running.url,
          .api_key_file = "",
          .mode = "launched",
          .jobs_before = running.jobs++,
          .log = running.log,
          .coordinate = running.key.axes};
}

void ServerPool::Spawned(std::size_t entry, int pid, int port, std::string log) {
  auto it = launched_.find(entry);
  if (it == launched_.end()) return;
  it->second.pid = pid;
  it->second.url = "http://" + std::string(kLoopback) + ":" + std::to_string(port);
  it->second.log = std::move(log);
}

JobServer ServerPool::Ready(std::size_t entry, const std::string& run_id) {
  launched_.at(entry).ready = true;
  return Take(entry, run_id);
}

void ServerPool::Failed(std::size_t entry) { launched_.erase(entry); }

void ServerPool::Release(const std::string& run_id) {
  auto user = users_.find(run_id);
  if (user == users_.end()) return;
  auto running = launched_.find(user->second);
  if (running != launched_.end()) running->second.users.erase(run_id);
  users_.erase(user);
}

std::vector<int> ServerPool::Pids() const {
  std::vector<int> pids;
  for (const auto& [entry, running] : launched_) {
    if (running.pid > 0) pids.push_back(running.pid);
  }
  return pids;
}

}  // namespace orch::agent
