#include "cli/status_command.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/client_commands.h"
#include "cli/command.h"

namespace orch::cli {
namespace {

constexpr int kBarWidth = 30;

std::string Duration(std::chrono::milliseconds ms) {
  long long s = ms.count() / 1000;
  std::ostringstream out;
  if (s >= 3600)
    out << s / 3600 << "h" << (s % 3600) / 60 << "m";
  else if (s >= 60)
    out << s / 60 << "m" << s % 60 << "s";
  else
    out << s << "s";
  return out.str();
}

const char* StateName(protocol::AgentState state) {
  switch (state) {
    case protocol::AgentState::kConnected:
      return "connected";
    case protocol::AgentState::kDraining:
      return "draining";
    case protocol::AgentState::kDisconnected:
      return "disconnected";
  }
  return "?";
}

// '#' succeeded, '>' running, 'x' failed, '.' pending.
std::string Bar(const protocol::ExperimentProgress& e, bool terminal) {
  auto cells = [&](std::uint32_t n) {
    return e.total == 0
               ? 0
               : static_cast<int>((static_cast<long>(n) * kBarWidth) / e.total);
  };
  int done = cells(e.succeeded), running = cells(e.running),
      failed = cells(e.failed);
  int pending = std::max(0, kBarWidth - done - running - failed);
  std::string bar = "[";
  if (terminal) bar += "\033[32m";
  bar += std::string(done, '#');
  if (terminal) bar += "\033[33m";
  bar += std::string(running, '>');
  if (terminal) bar += "\033[31m";
  bar += std::string(failed, 'x');
  if (terminal) bar += "\033[0m";
  return bar + std::string(pending, '.') + "]";
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out.empty() ? "-" : out;
}

void PrintExperiments(std::ostringstream& out,
                      const protocol::StatusReply& status, bool terminal) {
  out << "EXPERIMENTS\n";
  if (status.experiments.empty()) out << "  (none submitted)\n";
  for (const protocol::ExperimentProgress& e : status.experiments) {
    out << "  " << e.experiment << "  " << Bar(e, terminal) << "  "
        << e.succeeded << "/" << e.total << " succeeded, " << e.running
        << " running, " << e.pending << " pending, " << e.failed << " failed";
    bool done = e.running == 0 && e.pending == 0;
    out << ", ETA "
        << (done                ? "done"
            : e.eta.count() > 0 ? Duration(e.eta)
                                : "-")
        << "\n";
  }
}

void PrintAgents(std::ostringstream& out, const protocol::StatusReply& status) {
  out << "AGENTS\n";
  if (status.agents.empty()) out << "  (none registered)\n";
  for (const protocol::AgentSummary& a : status.agents) {
    out << "  " << a.agent_id << "  host " << (a.host.empty() ? "-" : a.host)
        << "  " << a.hardware_class << "  engines " << Join(a.engines) << "  "
        << StateName(a.state) << "  run " << Join(a.current_runs)
        << "  heartbeat " << Duration(a.heartbeat_age) << " ago\n";
  }
}

bool AllDone(const protocol::StatusReply& status) {
  if (status.experiments.empty()) return false;
  return std::all_of(
      status.experiments.begin(), status.experiments.end(),
      [](const auto& e) { return e.running == 0 && e.pending == 0; });
}

struct StatusOptions {
  bool watch = false;
  bool json = false;
  std::string experiment;
  int interval_ms = 1000;
  ClientOptions client;
};

int RunStatus(const StatusOptions& options) {
  bool terminal = isatty(STDOUT_FILENO) == 1;
  while (true) {
    Result<protocol::Message> reply =
        Request(options.client, protocol::StatusRequest{options.experiment});
    if (!reply.ok()) {
      std::cerr << "orch status: " << reply.status().message() << "\n";
      return kExitError;
    }
    const auto* status = std::get_if<protocol::StatusReply>(&*reply);
    if (status == nullptr) {
      std::cerr << "orch status: unexpected " << protocol::MessageName(*reply)
                << "\n";
      return kExitError;
    }
    if (options.json) {
      std::cout << FormatStatusJson(*status) << std::flush;
    } else {
      if (options.watch && terminal) std::cout << "\033[H\033[2J";
      std::cout << FormatStatusText(*status, terminal) << std::flush;
    }
    if (!options.watch || AllDone(*status)) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(options.interval_ms));
  }
}

}  // namespace

std::string FormatStatusText(const protocol::StatusReply& status,
                             bool terminal) {
  std::ostringstream out;
  PrintExperiments(out, status, terminal);
  PrintAgents(out, status);
  if (!status.recent_failures.empty()) {
    out << "RECENT FAILURES\n";
    for (const std::string& f : status.recent_failures)
      out << "  " << f << "\n";
  }
  return out.str();
}

std::string FormatStatusJson(const protocol::StatusReply& status) {
  nlohmann::json doc = {{"schema", "orch.status/1"}};
  doc["experiments"] = nlohmann::json::array();
  for (const protocol::ExperimentProgress& e : status.experiments) {
    doc["experiments"].push_back({{"experiment", e.experiment},
                                  {"total", e.total},
                                  {"succeeded", e.succeeded},
                                  {"running", e.running},
                                  {"pending", e.pending},
                                  {"failed", e.failed},
                                  {"eta_ms", e.eta.count()}});
  }
  doc["agents"] = nlohmann::json::array();
  for (const protocol::AgentSummary& a : status.agents) {
    doc["agents"].push_back({{"id", a.agent_id},
                             {"host", a.host},
                             {"hardware", a.hardware_class},
                             {"engines", a.engines},
                             {"state", StateName(a.state)},
                             {"current_runs", a.current_runs},
                             {"heartbeat_age_ms", a.heartbeat_age.count()}});
  }
  doc["recent_failures"] = status.recent_failures;
  return doc.dump(2) + "\n";
}

void RegisterStatusCommand(CLI::App& app, int& exit_code) {
  auto options =
      std::make_shared<StatusOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Show progress per experiment, the agents and recent failures.");
  cmd->add_flag(
      "--watch", options->watch,
      "refresh every --interval until every experiment is done (Ctrl-C stops)");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.status/1)");
  cmd->add_option("--experiment", options->experiment, "only this experiment");
  cmd->add_option("--interval", options->interval_ms,
                  "refresh interval in ms for --watch")
      ->check(CLI::PositiveNumber);
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] { exit_code = RunStatus(*options); });
}

}  // namespace orch::cli
