// The status page of the coordinator's HTTP listener (metrics_page.h).
#include <cctype>
#include <sstream>

#include "base/strings.h"
#include "coordinator/metrics_page.h"

namespace orch::coordinator {
namespace {

// The most job rows the page lists; the rest are counted.
constexpr std::size_t kMaxJobRows = 500;

const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:"
    "1.5em}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}th{background:#eee}"
    "td.n{text-align:right}.failed{color:#a00}";

void Cell(std::ostringstream& out, std::string_view text, bool number = false) {
  out << (number ? "<td class=\"n\">" : "<td>") << EscapeHtml(text) << "</td>";
}

void Experiments(const protocol::StatusReply& status, std::ostringstream& out) {
  out << "<h2>Experiments</h2>\n<table id=\"experiments\"><tr><th>experiment</th><th>total</th>"
         "<th>pending</th><th>running</th><th>succeeded</th><th>failed</th><th>cancelled</th>"
         "<th>report</th></tr>\n";
  for (const protocol::ExperimentProgress& e : status.experiments) {
    out << "<tr data-experiment=\"" << EscapeHtml(e.experiment) << "\">";
    Cell(out, e.experiment);
    for (std::uint32_t n : {e.total, e.pending, e.running, e.succeeded, e.failed, e.cancelled}) {
      Cell(out, std::to_string(n), true);
    }
    out << "<td><a href=\"/report/" << EncodePathSegment(e.experiment) << "\">report</a></td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
}

// Failed jobs with their reasons, then the running ones and the pending ones no agent
// can run (with why they wait).
void Jobs(const protocol::StatusReply& status, std::ostringstream& out) {
  out << "<h2>Jobs</h2>\n<table id=\"jobs\"><tr><th>job</th><th>experiment</th><th>cell</th>"
         "<th>state</th><th>agent</th><th>attempts</th><th>reason</th></tr>\n";
  std::size_t listed = 0;
  std::size_t omitted = status.jobs_omitted;
  for (const char* state : {"failed", "running", "assigned", "pending"}) {
    for (const protocol::JobStatus& job : status.jobs) {
      if (job.state != state || (job.state == "pending" && job.runnable)) continue;
      if (listed == kMaxJobRows) {
        ++omitted;
        continue;
      }
      ++listed;
      out << "<tr class=\"" << EscapeHtml(job.state) << "\">";
      for (const std::string* text :
           {&job.job_id, &job.experiment, &job.cell, &job.state, &job.agent_id}) {
        Cell(out, *text);
      }
      Cell(out, std::to_string(job.attempts), true);
      Cell(out, job.reason);
      out << "</tr>\n";
    }
  }
  out << "</table>\n";
  if (omitted > 0) out << "<p>" << omitted << " more jobs not listed.</p>\n";
}

void WriteAgents(const protocol::StatusReply& status, std::ostringstream& out) {
  out << "<h2>WriteAgents</h2>\n<table id=\"agents\"><tr><th>agent</th><th>host</th><th>state</th>"
         "<th>engines</th><th>runs</th><th>last seen</th><th>quarantined</th></tr>\n";
  for (const protocol::AgentSummary& a : status.agents) {
    std::string engines;
    for (const std::string& engine : a.engines) engines += (engines.empty() ? "" : ", ") + engine;
    std::string state(protocol::AgentStateName(a.state));
    out << "<tr>";
    Cell(out, a.agent_id);
    Cell(out, a.host);
    Cell(out, state);
    Cell(out, engines);
    Cell(out, protocol::AgentRunsText(a), true);
    Cell(out,
         a.state == protocol::AgentState::kNeverSeen
             ? std::string("never")
             : std::to_string(a.heartbeat_age.count() / 1000) + " s ago",
         true);
    Cell(out, a.quarantined);
    out << "</tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

std::string StatusPageHtml(const protocol::StatusReply& status, std::string_view coordinator_id,
                           int refresh_seconds) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
      << "<meta http-equiv=\"refresh\" content=\"" << refresh_seconds << "\">"
      << "<title>orch coordinator " << EscapeHtml(coordinator_id) << "</title><style>" << kStyle
      << "</style></head><body>\n<h1>orch coordinator " << EscapeHtml(coordinator_id)
      << "</h1>\n<p>Security: " << EscapeHtml(status.security) << ". This page reloads every "
      << refresh_seconds << " s; <a href=\"/metrics\">metrics</a>.</p>\n";
  Experiments(status, out);
  Jobs(status, out);
  WriteAgents(status, out);
  if (!status.recent_failures.empty()) {
    out << "<h2>Recent failures</h2>\n<ul id=\"failures\">\n";
    for (const std::string& failure : status.recent_failures) {
      out << "<li class=\"failed\">" << EscapeHtml(failure) << "</li>\n";
    }
    out << "</ul>\n";
  }
  out << "</body></html>\n";
  return out.str();
}

std::string EncodePathSegment(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += "0123456789ABCDEF"[c >> 4];
      out += "0123456789ABCDEF"[c & 15];
    }
  }
  return out;
}

std::optional<std::string> DecodePathSegment(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = hex(text[i + 1]);
    int low = hex(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace orch::coordinator
