#include "cli/status_text.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace orch::cli {
namespace {

constexpr int kBarWidth = 30;

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out.empty() ? "-" : out;
}

std::string Or(const std::string& text) { return text.empty() ? "-" : text; }

// '#' succeeded, '>' running, 'x' failed or cancelled, '.' pending.
std::string Bar(const protocol::ExperimentProgress& e, bool terminal) {
  auto cells = [&](std::uint32_t n) {
    return e.total == 0 ? 0 : static_cast<int>(std::int64_t{n} * kBarWidth / e.total);
  };
  int done = cells(e.succeeded), running = cells(e.running), failed = cells(e.failed + e.cancelled);
  int pending = std::max(0, kBarWidth - done - running - failed);
  auto colour = [&](const char* code) { return terminal ? std::string(code) : ""; };
  return "[" + colour("\033[32m") + std::string(done, '#') + colour("\033[33m") +
         std::string(running, '>') + colour("\033[31m") + std::string(failed, 'x') +
         colour("\033[0m") + std::string(pending, '.') + "]";
}

std::string Eta(const protocol::ExperimentProgress& e) {
  if (e.running == 0 && e.pending == 0) return "done";
  return e.eta_known ? FormatDuration(e.eta) : "unknown";
}

std::string Plural(std::uint32_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What a known ETA rests on: " (from 12 runs of 3 cells; 2 cells not yet measured)".
std::string EtaBasis(const protocol::ExperimentProgress& e) {
  if ((e.running == 0 && e.pending == 0) || !e.eta_known || e.eta_runs == 0) return "";
  std::string basis =
      " (from " + Plural(e.eta_runs, "run", "runs") + " of " + Plural(e.eta_cells, "cell", "cells");
  if (e.eta_cells_unmeasured > 0) {
    basis += "; " + Plural(e.eta_cells_unmeasured, "cell", "cells") + " not yet measured";
  }
  return basis + ")";
}

std::string Rate(double per_second) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", per_second);
  return text;
}

// Rows of cells printed as left-aligned columns.
std::string Columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// A run holds the job now (its elapsed time counts).
bool RunsNow(const protocol::JobStatus& job) {
  return job.state == "running" || job.state == "assigned";
}

std::string AgentAndHost(const protocol::JobStatus& job) {
  if (job.agent_id.empty()) return "-";
  return job.agent_id + (job.host.empty() ? "" : "@" + job.host);
}

void PrintExperiments(std::ostringstream& out, const protocol::StatusReply& status, bool terminal) {
  out << "EXPERIMENTS\n";
  if (status.experiments.empty()) out << "  (none submitted)\n";
  for (const protocol::ExperimentProgress& e : status.experiments) {
    out << "  " << e.experiment << "  " << Bar(e, terminal) << "  " << e.succeeded << "/" << e.total
        << " succeeded, " << e.running << " running, " << e.pending << " pending, " << e.failed
        << " failed, " << e.cancelled << " cancelled, ETA " << Eta(e) << EtaBasis(e) << "\n";
    if (e.unrunnable > 0) {
      out << "    " << e.unrunnable
          << " pending jobs can run on no connected agent (orch status --jobs " << e.experiment
          << ")\n";
    }
  }
}

void PrintRunning(std::ostringstream& out, const protocol::StatusReply& status) {
  std::vector<std::vector<std::string>> rows;
  for (const protocol::JobStatus& job : status.jobs) {
    if (!RunsNow(job)) continue;
    rows.push_back({job.job_id.substr(0, 12), job.cell, job.workload, AgentAndHost(job),
                    FormatDuration(job.elapsed)});
  }
  if (rows.empty()) return;
  out << "RUNNING\n" << Columns(rows, "  ");
}

void PrintUnrunnable(std::ostringstream& out, const protocol::StatusReply& status) {
  std::vector<std::vector<std::string>> rows;
  for (const protocol::JobStatus& job : status.jobs) {
    if (job.runnable || job.state != "pending") continue;
    rows.push_back({job.job_id.substr(0, 12), job.cell, job.workload, job.reason});
  }
  if (rows.empty()) return;
  out << "WAITING FOR AN AGENT THAT CAN RUN THEM\n" << Columns(rows, "  ");
}

void PrintAgents(std::ostringstream& out, const protocol::StatusReply& status) {
  out << "AGENTS\n";
  if (status.agents.empty()) out << "  (none registered)\n";
  for (const protocol::AgentSummary& a : status.agents) {
    if (a.state == protocol::AgentState::kNeverSeen) {
      // Known from its stored runs only (an earlier coordinator's, or a contributor's
      // imported bundle): there is no registration to describe.
      out << "  " << a.agent_id << "  never seen by this coordinator (known from stored runs)\n";
      continue;
    }
    out << "  " << a.agent_id << "  host " << Or(a.host) << "  " << a.hardware_class << "  engines "
        << Join(a.engines) << "  " << protocol::AgentStateName(a.state) << "  runs "
        << protocol::AgentRunsText(a) << "  " << Rate(a.positions_per_second) << " positions/s  "
        << a.model_count << " model files  heartbeat " << FormatDuration(a.heartbeat_age)
        << " ago\n";
    if (!a.quarantined.empty()) out << "    quarantined: " << a.quarantined << "\n";
  }
}

nlohmann::json JobJson(const protocol::JobStatus& job) {
  return {{"id", job.job_id},
          {"experiment", job.experiment},
          {"cell", job.cell},
          {"workload", job.workload},
          {"repeat", job.repeat},
          {"state", job.state},
          {"agent", job.agent_id},
          {"host", job.host},
          {"run", job.run_id},
          {"attempts", job.attempts},
          {"elapsed_ms", job.elapsed.count()},
          {"reason", job.reason},
          {"runnable", job.runnable}};
}

}  // namespace

std::string FormatDuration(std::chrono::milliseconds ms) {
  long long s = ms.count() / 1000;
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%llds", s);
  }
  return text;
}

std::string FormatStatusText(const protocol::StatusReply& status, bool terminal) {
  std::ostringstream out;
  if (status.security.starts_with("INSECURE")) {
    out << (terminal ? "\033[31m" : "") << "COORDINATOR " << status.security
        << ": anyone who can reach it may submit, cancel and forge results"
        << (terminal ? "\033[0m" : "") << "\n";
  }
  PrintExperiments(out, status, terminal);
  PrintRunning(out, status);
  PrintUnrunnable(out, status);
  PrintAgents(out, status);
  if (!status.recent_failures.empty()) {
    out << "RECENT FAILURES\n";
    for (const std::string& f : status.recent_failures) out << "  " << f << "\n";
  }
  return out.str();
}

std::string FormatJobsTable(const protocol::StatusReply& status) {
  std::vector<std::vector<std::string>> rows = {{"JOB", "EXPERIMENT", "CELL", "WORKLOAD", "REPEAT",
                                                 "STATE", "AGENT@HOST", "ATTEMPTS", "ELAPSED",
                                                 "REASON"}};
  for (const protocol::JobStatus& job : status.jobs) {
    rows.push_back({job.job_id.substr(0, 12), job.experiment, job.cell, job.workload,
                    std::to_string(job.repeat), job.state, AgentAndHost(job),
                    std::to_string(job.attempts),
                    RunsNow(job) || job.elapsed.count() > 0 ? FormatDuration(job.elapsed) : "-",
                    Or(job.reason)});
  }
  if (rows.size() == 1) return "(no jobs)\n";
  std::string table = Columns(rows, "");
  if (status.jobs_omitted > 0) {
    table += "... " + std::to_string(status.jobs_omitted) +
             " more jobs not listed (a reply lists at most " +
             std::to_string(protocol::kMaxStatusJobs) + ")\n";
  }
  return table;
}

std::string FormatUnrunnableJobs(const protocol::StatusReply& status, std::size_t* count) {
  protocol::StatusReply unrunnable;
  for (const protocol::JobStatus& job : status.jobs) {
    if (!job.runnable && job.state == "pending") unrunnable.jobs.push_back(job);
  }
  // A long list is cut at kMaxStatusJobs: the experiments' own counts are whole.
  std::size_t total = 0;
  for (const protocol::ExperimentProgress& e : status.experiments) total += e.unrunnable;
  total = std::max(total, unrunnable.jobs.size());
  unrunnable.jobs_omitted = static_cast<std::uint32_t>(total - unrunnable.jobs.size());
  if (count != nullptr) *count = total;
  return unrunnable.jobs.empty() ? "" : FormatJobsTable(unrunnable);
}

std::string FormatExperimentsTable(const protocol::StatusReply& status) {
  std::vector<std::vector<std::string>> rows = {{"EXPERIMENT", "TOTAL", "SUCCEEDED", "RUNNING",
                                                 "PENDING", "FAILED", "CANCELLED", "CAN'T RUN",
                                                 "ETA"}};
  for (const protocol::ExperimentProgress& e : status.experiments) {
    rows.push_back({e.experiment, std::to_string(e.total), std::to_string(e.succeeded),
                    std::to_string(e.running), std::to_string(e.pending), std::to_string(e.failed),
                    std::to_string(e.cancelled), std::to_string(e.unrunnable), Eta(e)});
  }
  if (rows.size() == 1) return "(no experiments submitted)\n";
  return Columns(rows, "");
}

std::string FormatStatusJson(const protocol::StatusReply& status) {
  nlohmann::json doc = {{"schema", "orch.status/1"}};
  doc["experiments"] = nlohmann::json::array();
  for (const protocol::ExperimentProgress& e : status.experiments) {
    doc["experiments"].push_back(
        {{"experiment", e.experiment},
         {"total", e.total},
         {"succeeded", e.succeeded},
         {"running", e.running},
         {"pending", e.pending},
         {"failed", e.failed},
         {"cancelled", e.cancelled},
         {"unrunnable", e.unrunnable},
         {"eta_ms", e.eta_known ? nlohmann::json(e.eta.count()) : nlohmann::json()},
         {"eta_runs", e.eta_runs},
         {"eta_cells", e.eta_cells},
         {"eta_cells_unmeasured", e.eta_cells_unmeasured}});
  }
  doc["agents"] = nlohmann::json::array();
  for (const protocol::AgentSummary& a : status.agents) {
    doc["agents"].push_back({{"id", a.agent_id},
                             {"host", a.host},
                             {"hardware", a.hardware_class},
                             {"engines", a.engines},
                             {"state", protocol::AgentStateName(a.state)},
                             {"slots", a.slots},
                             {"current_runs", a.current_runs},
                             {"delivering_runs", a.delivering_runs},
                             {"positions_per_second", a.positions_per_second},
                             {"model_files", a.model_count},
                             {"quarantined", a.quarantined},
                             {"heartbeat_age_ms", a.heartbeat_age.count()}});
  }
  doc["jobs"] = nlohmann::json::array();
  for (const protocol::JobStatus& job : status.jobs) doc["jobs"].push_back(JobJson(job));
  doc["recent_failures"] = status.recent_failures;
  doc["security"] = status.security;
  doc["jobs_omitted"] = status.jobs_omitted;
  return doc.dump(2) + "\n";
}

}  // namespace orch::cli
