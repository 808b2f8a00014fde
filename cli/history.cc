#include "cli/history.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "base/suggest.h"
#include "coordinator/plan_catalog.h"

namespace orch::cli {
namespace {

using store::RunState;

struct HistoryJobPlace {
  std::string cell;
  std::string workload;
  std::uint32_t repeat = 0;
};

// Job id -> cell, workload and repeat, from every stored plan that parses.
std::unordered_map<std::string, HistoryJobPlace> HistoryPlaces(const store::StoreState& state) {
  std::unordered_map<std::string, HistoryJobPlace> places;
  for (const store::PlanRecord& plan : state.plans) {
    Result<coordinator::ParsedPlan> parsed =
        coordinator::ParsePlanJson(plan.json, coordinator::PlanSource::kStore);
    if (!parsed.ok()) continue;
    for (const coordinator::PlannedJob& job : parsed->jobs) {
      places[job.id] = {job.cell, parsed->workloads[job.workload].name, job.repeat};
    }
  }
  return places;
}

Status HistoryCheckFilter(const store::StoreState& state, const HistoryFilter& filter) {
  if (!filter.state.empty()) {
    std::vector<std::string> names;
    for (std::uint8_t s = 0; s <= store::kMaxRunState; ++s) {
      names.emplace_back(store::RunStateName(static_cast<RunState>(s)));
    }
    if (std::find(names.begin(), names.end(), filter.state) == names.end()) {
      std::string all;
      for (const std::string& name : names) all += (all.empty() ? "" : ", ") + name;
      return InvalidArgument("--state " + filter.state + ": not a run state (one of " + all + ")");
    }
  }
  if (filter.experiment.empty()) return Status::Ok();
  std::vector<std::string> names;
  for (const store::PlanRecord& plan : state.plans) names.push_back(plan.experiment);
  if (std::find(names.begin(), names.end(), filter.experiment) != names.end()) return Status::Ok();
  std::string all;
  for (const std::string& name : names) all += (all.empty() ? "" : ", ") + name;
  std::string closest = ClosestName(filter.experiment, names);
  return NotFound("no experiment " + filter.experiment +
                  (closest.empty() ? "" : " (did you mean " + closest + "?)") +
                  "; the store holds: " + (all.empty() ? "none" : all));
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string HistoryDuration(std::int64_t ms) {
  if (ms < 0) return "-";
  std::int64_t s = ms / 1000;
  char out[32];
  if (s < 60) {
    std::snprintf(out, sizeof out, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (s < 3600) {
    std::snprintf(out, sizeof out, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(out, sizeof out, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  }
  return out;
}

// Run duration: assignment to result; -1 when either is unknown.
std::int64_t HistoryElapsed(const HistoryRow& row) {
  if (row.started_at_ms <= 0 || row.ended_at_ms <= 0) return -1;
  return row.ended_at_ms - row.started_at_ms;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

}  // namespace

Result<std::vector<HistoryRow>> BuildHistory(const store::StoreState& state,
                                             const std::map<std::string, std::string>& hosts,
                                             const HistoryFilter& filter) {
  ORCH_RETURN_IF_ERROR(HistoryCheckFilter(state, filter));
  std::unordered_map<std::string, const store::JobRecord*> jobs;
  for (const store::JobRecord& job : state.jobs) jobs.emplace(job.id, &job);
  std::unordered_map<std::string, HistoryJobPlace> places = HistoryPlaces(state);
  std::vector<HistoryRow> rows;
  for (const store::RunRecord& run : state.runs) {
    auto job = jobs.find(run.job_id);
    if (job == jobs.end()) continue;
    if (!filter.experiment.empty() && job->second->experiment != filter.experiment) continue;
    if (!filter.state.empty() && store::RunStateName(run.state) != filter.state) continue;
    std::int64_t latest = std::max(run.assigned_at_ms, run.ended_at_ms);
    if (filter.since_ms > 0 && latest < filter.since_ms) continue;
    HistoryRow row;
    row.job_id = run.job_id;
    row.experiment = job->second->experiment;
    if (auto place = places.find(run.job_id); place != places.end()) {
      row.cell = place->second.cell;
      row.workload = place->second.workload;
      row.repeat = place->second.repeat;
    }
    row.run_id = run.id;
    row.agent_id = run.agent_id.empty() ? run.contributor : run.agent_id;
    if (auto host = hosts.find(run.agent_id); host != hosts.end()) row.host = host->second;
    row.submitted_at_ms = job->second->submitted_at_ms;
    row.started_at_ms = run.assigned_at_ms > 0 ? run.assigned_at_ms : run.imported_at_ms;
    row.ended_at_ms = run.ended_at_ms;
    row.attempts = job->second->attempts;
    row.outcome = std::string(store::RunStateName(run.state));
    row.error = FirstLine(run.error);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const HistoryRow& a, const HistoryRow& b) {
    return a.started_at_ms != b.started_at_ms ? a.started_at_ms < b.started_at_ms
                                              : a.run_id < b.run_id;
  });
  return rows;
}

std::map<std::string, std::string> HostsFromEvents(const std::vector<store::EventRecord>& events) {
  std::map<std::string, std::string> hosts;
  for (const store::EventRecord& event : events) {
    if (event.kind != "agent.registered" || event.detail.rfind("host ", 0) != 0) continue;
    std::string host = event.detail.substr(5, event.detail.find(',') - 5);
    if (host != "?") hosts[event.subject] = host;
  }
  return hosts;
}

Result<std::int64_t> ParseSince(const std::string& text, std::int64_t now_ms) {
  auto bad = [&] {
    return InvalidArgument("--since " + text +
                           ": not a duration (90s, 30m, 2h, 7d) or a UTC date and time "
                           "(2026-12-05, 2026-12-05T06:30, 2026-12-05T06:30:15Z)");
  };
  if (text.size() >= 2 && std::all_of(text.begin(), text.end() - 1, ::isdigit)) {
    std::int64_t unit = 0;
    switch (text.back()) {
      case 's':
        unit = 1000;
        break;
      case 'm':
        unit = 60'000;
        break;
      case 'h':
        unit = 3'600'000;
        break;
      case 'd':
        unit = 86'400'000;
        break;
      default:
        return bad();
    }
    if (text.size() > 10) return bad();
    return now_ms - std::stoll(text.substr(0, text.size() - 1)) * unit;
  }
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail[4] = {};
  int n = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%3s", &y, &mo, &d, &h, &mi, &s, tail);
  bool shape = n == 3 ? text.size() == 10 : n >= 5;
  if (!shape || (n == 7 && std::string(tail) != "Z") || mo < 1 || mo > 12 || d < 1 || d > 31 ||
      h > 23 || mi > 59 || s > 60) {
    return bad();
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

std::string FormatTime(std::int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string FormatHistoryText(const std::vector<HistoryRow>& rows) {
  if (rows.empty()) return "no runs\n";
  std::vector<std::vector<std::string>> table = {{"JOB", "EXPERIMENT", "CELL", "WORKLOAD", "REP",
                                                  "RUN", "AGENT", "HOST", "SUBMITTED", "START",
                                                  "END", "DURATION", "ATTEMPTS", "OUTCOME"}};
  for (const HistoryRow& row : rows) {
    std::string outcome = row.outcome + (row.error.empty() ? "" : ": " + row.error);
    table.push_back({row.job_id.substr(0, 12), row.experiment, OrDash(row.cell),
                     OrDash(row.workload), std::to_string(row.repeat), row.run_id,
                     OrDash(row.agent_id), OrDash(row.host), FormatTime(row.submitted_at_ms),
                     FormatTime(row.started_at_ms), FormatTime(row.ended_at_ms),
                     HistoryDuration(HistoryElapsed(row)), std::to_string(row.attempts), outcome});
  }
  std::vector<std::size_t> width(table[0].size(), 0);
  for (const auto& line : table) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::ostringstream out;
  for (const auto& line : table) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      out << line[i];
      if (i + 1 < line.size()) out << std::string(width[i] - line[i].size() + 2, ' ');
    }
    out << "\n";
  }
  return out.str();
}

std::string FormatHistoryJson(const std::vector<HistoryRow>& rows) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const HistoryRow& row : rows) {
    std::int64_t elapsed = HistoryElapsed(row);
    runs.push_back(
        {{"job_id", row.job_id},
         {"experiment", row.experiment},
         {"cell", row.cell},
         {"workload", row.workload},
         {"repeat", row.repeat},
         {"run_id", row.run_id},
         {"agent", row.agent_id},
         {"host", row.host},
         {"submitted_at_ms", row.submitted_at_ms},
         {"started_at_ms", row.started_at_ms},
         {"ended_at_ms", row.ended_at_ms},
         {"elapsed_ms", elapsed < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(elapsed)},
         {"attempts", row.attempts},
         {"outcome", row.outcome},
         {"error", row.error}});
  }
  nlohmann::ordered_json doc = {{"schema", "orch.history/1"}, {"runs", runs}};
  return doc.dump(2) + "\n";
}

std::string FormatEventText(const store::EventRecord& event) {
  return std::to_string(event.seq) + "  " + FormatTime(event.time_ms) + "  " + event.kind + "  " +
         event.subject + (event.detail.empty() ? "" : "  " + event.detail) + "\n";
}

std::string FormatEventJson(const store::EventRecord& event) {
  nlohmann::ordered_json line = {
      {"seq", event.seq},   {"time_ms", event.time_ms}, {"time", FormatTime(event.time_ms)},
      {"kind", event.kind}, {"subject", event.subject}, {"detail", event.detail}};
  return line.dump() + "\n";
}

}  // namespace orch::cli
