// What `orch history` and `orch events` print, from what a store holds: one row per run
// (as Slurm's sacct lists job steps) and the event log's entries. Pure: the caller reads
// the store (cli/stored_status.h) and passes the time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/records.h"

namespace orch::cli {

// One run of a job, with where and when it ran and how it ended.
struct HistoryRow {
  std::string job_id;
  std::string experiment;
  std::string cell;
  std::string workload;
  std::uint32_t repeat = 0;
  std::string run_id;
  std::string agent_id;
  std::string host;                  // from the agent's last registration event; "" unknown
  std::int64_t submitted_at_ms = 0;  // 0: unknown (times are ms since the Unix epoch)
  std::int64_t started_at_ms = 0;    // when it was assigned
  std::int64_t ended_at_ms = 0;      // when its result arrived; 0: none (yet)
  std::int32_t attempts = 0;         // runs the job has had so far
  std::string outcome;               // store::RunStateName of the run
  std::string error;                 // the first line of its error; "" when none
};

struct HistoryFilter {
  std::string experiment;     // empty: every experiment
  std::string state;          // a run state name (store::RunStateName); empty: any
  std::int64_t since_ms = 0;  // runs started or ended at or after it; 0: all
};

// The rows of `state`'s runs that pass `filter`, sorted by start (then run id);
// `hosts`: agent id -> host. InvalidArgument naming the value and what is valid for an
// unknown state; NotFound listing the stored experiments for an unknown experiment.
// Plans that do not parse leave their runs without cell and workload.
Result<std::vector<HistoryRow>> BuildHistory(const store::StoreState& state,
                                             const std::map<std::string, std::string>& hosts,
                                             const HistoryFilter& filter);

// Agent id -> host, from the "agent.registered" events (their detail starts "host NAME,");
// the latest registration wins.
std::map<std::string, std::string> HostsFromEvents(const std::vector<store::EventRecord>& events);

// `--since`: a duration back from `now_ms` ("90s", "30m", "2h", "7d") or a UTC date and
// time ("2026-12-05", "2026-12-05T06:30", "2026-12-05T06:30:15", optional "Z"). Returns
// ms since the Unix epoch; InvalidArgument naming the value otherwise.
Result<std::int64_t> ParseSince(const std::string& text, std::int64_t now_ms);

// A time as "2026-12-05T06:30:15Z" (UTC); "-" for 0.
std::string FormatTime(std::int64_t ms);

// An aligned table, one line per row, with a header; "no runs" when there are none.
std::string FormatHistoryText(const std::vector<HistoryRow>& rows);
// {"schema": "orch.history/1", "runs": [...]} with times as ms and as text.
std::string FormatHistoryJson(const std::vector<HistoryRow>& rows);

// One event as a line: "SEQ TIME KIND SUBJECT DETAIL".
std::string FormatEventText(const store::EventRecord& event);
// One event as one line of JSON (JSON Lines): seq, time_ms, time, kind, subject, detail.
std::string FormatEventJson(const store::EventRecord& event);

}  // namespace orch::cli
