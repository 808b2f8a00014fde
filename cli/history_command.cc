#include "cli/history_command.h"

#include <csignal>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/history.h"
#include "cli/scratch_dir.h"
#include "cli/stored_status.h"

namespace orch::cli {
namespace {

struct HistoryOptions {
  std::string experiment;
  std::string data_dir = "./orch-data";
  std::string state;
  std::string since;
  bool json = false;
};

struct EventsOptions {
  std::string data_dir = "./orch-data";
  std::uint64_t since = 1;
  bool follow = false;
  bool json = false;
  int interval_ms = 1000;
};

int HistoryFail(const char* command, const Status& status) {
  std::cerr << "orch " << command << ": " << status.message() << "\n";
  bool input =
      status.code() == StatusCode::kNotFound || status.code() == StatusCode::kInvalidArgument;
  return input ? kExitInvalidInput : kExitError;
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::vector<store::EventRecord>> ReadEvents(store::Store& store, std::uint64_t from) {
  std::vector<store::EventRecord> events;
  ORCH_RETURN_IF_ERROR(store.ScanEvents(from, [&](const store::EventRecord& event) {
    events.push_back(event);
    return true;
  }));
  return events;
}

int RunHistory(const HistoryOptions& options) {
  HistoryFilter filter{options.experiment, options.state, 0};
  if (!options.since.empty()) {
    Result<std::int64_t> since = ParseSince(options.since, NowMs());
    if (!since.ok()) return HistoryFail("history", since.status());
    filter.since_ms = *since;
  }
  ScratchDir scratch("orch-history");
  Result<std::unique_ptr<store::Store>> store = OpenStoreToRead(options.data_dir, scratch);
  if (!store.ok()) return HistoryFail("history", store.status());
  Result<store::StoreState> state = (*store)->LoadState();
  if (!state.ok()) return HistoryFail("history", state.status());
  Result<std::vector<store::EventRecord>> events = ReadEvents(**store, 1);
  if (!events.ok()) return HistoryFail("history", events.status());
  Result<std::vector<HistoryRow>> rows = BuildHistory(*state, HostsFromEvents(*events), filter);
  if (!rows.ok()) return HistoryFail("history", rows.status());
  std::cout << (options.json ? FormatHistoryJson(*rows) : FormatHistoryText(*rows));
  return kExitOk;
}

volatile std::sig_atomic_t events_stop = 0;
extern "C" void EventsOnSignal(int) { events_stop = 1; }

// Prints the events from `next` on; returns the sequence number after the last printed.
Result<std::uint64_t> PrintEventsFrom(const EventsOptions& options, std::uint64_t next) {
  ScratchDir scratch("orch-events");
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store,
                        OpenStoreToRead(options.data_dir, scratch));
  ORCH_ASSIGN_OR_RETURN(std::vector<store::EventRecord> events, ReadEvents(*store, next));
  for (const store::EventRecord& event : events) {
    std::cout << (options.json ? FormatEventJson(event) : FormatEventText(event));
    next = event.seq + 1;
  }
  std::cout << std::flush;
  return next;
}

// --follow: polls a fresh read-only instance every interval (each sees what the
// coordinator has written by then) until SIGINT or SIGTERM, which end it with status 0.
int RunEvents(const EventsOptions& options) {
  Result<std::uint64_t> next = PrintEventsFrom(options, options.since);
  if (!next.ok()) return HistoryFail("events", next.status());
  if (!options.follow) return kExitOk;
  struct sigaction action {};
  action.sa_handler = EventsOnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  constexpr auto kStep = std::chrono::milliseconds(50);
  while (events_stop == 0) {
    for (int waited = 0; waited < options.interval_ms && events_stop == 0; waited += 50) {
      std::this_thread::sleep_for(kStep);
    }
    if (events_stop != 0) break;
    Result<std::uint64_t> after = PrintEventsFrom(options, *next);
    if (!after.ok()) return HistoryFail("events", after.status());
    next = after;
  }
  return kExitOk;
}

}  // namespace

void RegisterHistoryCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<HistoryOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "history",
      "List runs, one line each (as sacct): job, experiment, cell, workload, repeat, run,\n"
      "agent, host, submit/start/end times (UTC), duration, attempts and outcome with the\n"
      "error's first line, sorted by start. Reads the store, also while the coordinator\n"
      "runs. Exit status: 0 ok, 2 unknown experiment, state, time or store, 1 other error.");
  cmd->add_option("EXPERIMENT", options->experiment, "only this experiment");
  cmd->add_option("--data-dir", options->data_dir,
                  "the coordinator's data directory (its store is DIR/rocksdb)")
      ->capture_default_str();
  cmd->add_option("--state", options->state,
                  "only runs that ended so (succeeded, failed, lost, cancelled) or are "
                  "assigned or running");
  cmd->add_option("--since", options->since,
                  "only runs started or ended since: a duration back from now (30m, 2h, 7d) "
                  "or a UTC time (2026-12-05T06:30)");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.history/1)");
  cmd->callback([options, &exit_code] { exit_code = RunHistory(*options); });
}

void RegisterEventsCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<EventsOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "events",
      "Print the coordinator's event log (agents registered, departed, draining and\n"
      "drained, driver quarantines, plans submitted, edited and cancelled, runs assigned,\n"
      "started and lost, jobs requeued, retried, succeeded and failed): sequence number,\n"
      "time (UTC), kind, subject and detail. Reads the store, also while the coordinator\n"
      "runs; --follow keeps printing new events until Ctrl-C.");
  cmd->add_option("--data-dir", options->data_dir,
                  "the coordinator's data directory (its store is DIR/rocksdb)")
      ->capture_default_str();
  cmd->add_option("--since", options->since, "from this sequence number on")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--follow", options->follow,
                "keep polling for new events every --interval until Ctrl-C (exit status 0)");
  cmd->add_option("--interval", options->interval_ms, "poll interval in ms for --follow")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "print one JSON object per event and line");
  cmd->callback([options, &exit_code] { exit_code = RunEvents(*options); });
}

}  // namespace orch::cli
