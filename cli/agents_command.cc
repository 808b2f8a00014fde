#include "cli/agents_command.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/suggest.h"
#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/history.h"
#include "cli/scratch_dir.h"
#include "cli/status_text.h"
#include "cli/stored_status.h"

namespace orch::cli {
namespace {

constexpr std::size_t kLastRuns = 10;

struct AgentsOptions {
  std::string agent;
  bool json = false;
  ClientOptions client;
};

std::string AgentsJoin(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out.empty() ? "-" : out;
}

// The agent's last runs from the store in --data-dir, oldest first; none without one.
std::vector<HistoryRow> AgentLastRuns(const ClientOptions& client, const std::string& agent) {
  if (client.data_dir.empty()) return {};
  ScratchDir scratch("orch-agents");
  Result<std::unique_ptr<store::Store>> store = OpenStoreToRead(client.data_dir, scratch);
  if (!store.ok()) return {};
  Result<store::StoreState> state = (*store)->LoadState();
  if (!state.ok()) return {};
  Result<std::vector<HistoryRow>> rows = BuildHistory(*state, {}, {});
  if (!rows.ok()) return {};
  std::vector<HistoryRow> mine;
  for (HistoryRow& row : *rows) {
    if (row.agent_id == agent) mine.push_back(std::move(row));
  }
  if (mine.size() > kLastRuns) mine.erase(mine.begin(), mine.end() - kLastRuns);
  return mine;
}

nlohmann::json AgentJson(const protocol::AgentSummary& a) {
  return {{"id", a.agent_id},
          {"host", a.host},
          {"state", protocol::AgentStateName(a.state)},
          {"hardware", a.hardware_class},
          {"slots", a.slots},
          {"engines", a.engines},
          {"model_files", a.model_count},
          {"quarantined", a.quarantined},
          {"runs", a.current_runs},
          {"delivering_runs", a.delivering_runs},
          {"heartbeat_age_ms", a.heartbeat_age.count()}};
}

int ShowAgent(const AgentsOptions& options, const protocol::StatusReply& status) {
  auto it = std::find_if(status.agents.begin(), status.agents.end(),
                         [&](const auto& a) { return a.agent_id == options.agent; });
  if (it == status.agents.end()) {
    std::vector<std::string> ids;
    for (const protocol::AgentSummary& a : status.agents) ids.push_back(a.agent_id);
    std::string closest = ClosestName(options.agent, ids);
    std::cerr << "orch agents: no agent " << options.agent
              << (closest.empty() ? "" : " (did you mean " + closest + "?)")
              << "; the coordinator knows: " << AgentsJoin(ids, ", ") << "\n";
    return kExitInvalidInput;
  }
  std::vector<HistoryRow> runs = AgentLastRuns(options.client, options.agent);
  if (options.json) {
    nlohmann::json doc = AgentJson(*it);
    doc["schema"] = "orch.agent/1";
    doc["last_runs"] = nlohmann::json::parse(FormatHistoryJson(runs))["runs"];
    std::cout << doc.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << FormatAgentDetail(*it);
  if (!options.client.data_dir.empty()) {
    std::cout << "last runs (from the store in " << options.client.data_dir << "):\n"
              << FormatHistoryText(runs);
  }
  return kExitOk;
}

int RunAgents(const AgentsOptions& options) {
  Result<protocol::StatusReply> status = RequestStatus(options.client, protocol::StatusRequest{});
  if (!status.ok()) {
    std::cerr << "orch agents: " << status.status().message() << "\n";
    return kExitError;
  }
  if (!options.agent.empty()) return ShowAgent(options, *status);
  if (options.json) {
    nlohmann::json doc = {{"schema", "orch.agents/1"}, {"agents", nlohmann::json::array()}};
    for (const protocol::AgentSummary& a : status->agents) doc["agents"].push_back(AgentJson(a));
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << FormatAgentsTable(*status);
  }
  return kExitOk;
}

}  // namespace

std::string FormatAgentsTable(const protocol::StatusReply& status) {
  if (status.agents.empty()) return "(no agents)\n";
  std::vector<std::vector<std::string>> rows = {
      {"AGENT", "STATE", "HOST", "HARDWARE", "RUNS", "ENGINES", "HEARD", "QUARANTINED"}};
  for (const protocol::AgentSummary& a : status.agents) {
    bool seen = a.state != protocol::AgentState::kNeverSeen;
    rows.push_back(
        {a.agent_id, std::string(protocol::AgentStateName(a.state)), a.host.empty() ? "-" : a.host,
         a.hardware_class.empty() ? "-" : a.hardware_class, protocol::AgentRunsText(a),
         AgentsJoin(a.engines, ","), seen ? FormatDuration(a.heartbeat_age) + " ago" : "-",
         a.quarantined.empty() ? "-" : "yes"});
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out << row[i];
      if (i + 1 < row.size()) out << std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << "\n";
  }
  return out.str();
}

std::string FormatAgentDetail(const protocol::AgentSummary& a) {
  std::ostringstream out;
  out << "agent " << a.agent_id << ": " << protocol::AgentStateName(a.state) << "\n"
      << "  host: " << (a.host.empty() ? "-" : a.host) << "\n"
      << "  hardware: " << (a.hardware_class.empty() ? "-" : a.hardware_class) << ", " << a.slots
      << (a.slots == 1 ? " slot" : " slots") << "\n"
      << "  drivers (engine@version): " << AgentsJoin(a.engines, ", ") << "\n"
      << "  model files: " << a.model_count << "\n"
      << "  quarantined drivers: " << (a.quarantined.empty() ? "none" : a.quarantined) << "\n"
      << "  runs in flight: " << AgentsJoin(a.current_runs, ", ") << "\n";
  if (a.state != protocol::AgentState::kNeverSeen) {
    out << "  last heard: " << FormatDuration(a.heartbeat_age) << " ago\n";
  }
  return out.str();
}

void RegisterAgentsCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AgentsOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "agents",
      "List the agents the coordinator knows and their states (up, draining, drained,\n"
      "down, never seen); with ID, that agent's drivers and versions, model files,\n"
      "quarantined drivers, runs in flight and (with --data-dir) its last runs.");
  cmd->add_option("ID", options->agent, "only this agent, in full");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.agents/1, one: orch.agent/1)");
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] { exit_code = RunAgents(*options); });
}

}  // namespace orch::cli
